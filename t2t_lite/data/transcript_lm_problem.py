"""A language model of a speech problem's transcripts, in its target vocabulary.

    @registry.register_problem
    class LanguagemodelMyCorpus(TranscriptLanguageModelProblem):
        speech_problem = "my_corpus"

Each split is the speech problem's transcripts of the same split, read
without audio (`transcripts(tmp_dir, split)`), encoded by the speech
problem's target encoder with EOS appended: so the LM learns exactly the
token sequences the recognizer emits, and shallow fusion (decode hparams
`lm_dir`, `lm_weight`) can add their log probabilities. The LM trains on
the training transcripts only; dev and test measure its perplexity on the
recognizer's dev and test sentences.
"""

from __future__ import annotations

from collections.abc import Iterator

from t2t_lite import registry
from t2t_lite.data.problem import EVAL, TEST, TRAIN
from t2t_lite.data.text_encoders import TextEncoder
from t2t_lite.data.text_problems import Text2TextProblem


class TranscriptLanguageModelProblem(Text2TextProblem):
    """A language model problem (no inputs) over a speech problem's transcripts.

    Class attributes:
      speech_problem: the registered name of the speech problem; it must
        have `transcripts(tmp_dir, split)`.
    """

    input_modality = None
    speech_problem: str = ""
    num_shards = {TRAIN: 1, EVAL: 1, TEST: 1}

    def speech(self):
        """The speech problem whose transcripts this LM models."""
        return registry.problem(self.speech_problem)

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        return {"targets": self.speech().feature_encoders(data_dir)["targets"]}

    def generate_text_pairs(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[dict]:
        del data_dir
        for text in self.speech().transcripts(tmp_dir, split):
            yield {"targets": text}
