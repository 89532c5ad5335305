"""Text-to-text problems: pairs of strings, encoded, EOS appended."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from t2t_lite.data.problem import Problem, SplitReport
from t2t_lite.data.text_encoders import EOS_ID


class Text2TextProblem(Problem):
    """A problem whose examples are `{"inputs": str, "targets": str}` pairs.

    Subclasses implement `generate_text_pairs` and `feature_encoders`
    (and set `input_modality = None` for a language model, whose pairs
    have only "targets").
    """

    def generate_text_pairs(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[dict]:
        raise NotImplementedError(f"{type(self).__name__} must implement generate_text_pairs")

    def generate_examples(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[dict]:
        pairs = self.generate_text_pairs(data_dir, tmp_dir, split)
        return self.encode_pairs(data_dir, pairs, report)

    def encode_pairs(
        self, data_dir: str, pairs: Iterable[dict], report: SplitReport
    ) -> Iterator[dict]:
        """Each pair's strings as ids with EOS; a pair with an empty string is counted."""
        encoders = self.feature_encoders(data_dir)
        for pair in pairs:
            example = {}
            for name, text in pair.items():
                ids = encoders[name].encode(text)
                if not ids:
                    report.skip(f"empty {name}")
                    break
                example[name] = ids + [EOS_ID]
            else:
                yield example
