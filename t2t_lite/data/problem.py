"""The Problem base class: where data comes from, how it is featurized and judged.

A problem owns its data end to end (TF Model Garden's task split): raw data
to sharded TFRecords (`generate_data`, run by `t2t-lite-datagen`), records to
model features (`decode_example`, `preprocess_example`), the lengths of its
examples (see "Lengths" below), its own hparams (`add_hparams`), encoders and
metrics.
The model and the trainer never look inside the data.

Subclasses implement `generate_examples(data_dir, tmp_dir, split)`, yielding
dicts ready for `tf.train.Example` (see `t2t_lite.data.shards.to_example`),
and `example_spec()`; most also override `preprocess_example`.

Lengths, in the units each method's name gives:

    model_lengths(features)      one featurized example: "inputs" (tokens,
                                    or frames for speech) and "targets" (tokens)
    batching_length(lengths, hp)    T2T's bucketing length from those: the
                                    longest in tokens; speech frames x mel bins
    stored_lengths(example)       one stored example, as datagen records it in
                                    the manifest (speech: "samples", "targets")
    model_lengths_of_stored  a split's manifest lengths -> the arrays
                                    `model_lengths` would give, unread
    stored_seconds           a split's audio seconds per example

The input pipeline applies the length rule to `model_lengths` and
`batching_length`; the length report before a run applies the same rule to
`model_lengths_of_stored` (`length_policy.checked_lengths`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from t2t_lite.data import shards
from t2t_lite.data.text_encoders import TextEncoder
from t2t_lite.hparam import HParams
from t2t_lite.registry import default_name

TRAIN, EVAL, TEST = "train", "dev", "test"


class DataError(ValueError):
    """Raw or generated data is missing or unusable; the message says what to do."""


@dataclasses.dataclass
class SplitReport:
    """What datagen did for one split."""

    written: int = 0
    skipped: Counter = dataclasses.field(default_factory=Counter)  # reason -> count
    audio_seconds: float = 0.0
    reused: bool = False  # shards already existed and were kept

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


@dataclasses.dataclass
class DatagenReport:
    """What datagen did, per split; `summary()` is what the CLI prints."""

    problem: str
    splits: dict[str, SplitReport] = dataclasses.field(default_factory=dict)

    def split(self, name: str) -> SplitReport:
        return self.splits.setdefault(name, SplitReport())

    def summary(self) -> str:
        lines = [f"{self.problem}:"]
        for name, report in self.splits.items():
            if report.reused:
                lines.append(f"  {name}: shards exist, kept (--overwrite to regenerate)")
                continue
            skipped = sum(report.skipped.values())
            line = f"  {name}: {report.written} examples written, {skipped} skipped"
            if report.skipped:
                reasons = ", ".join(f"{r}: {n}" for r, n in sorted(report.skipped.items()))
                line += f" ({reasons})"
            if report.audio_seconds:
                line += f", {report.audio_seconds / 3600:.2f} h of audio"
            lines.append(line)
        return "\n".join(lines)


def dummy_batch(spec: dict[str, tf.TensorSpec]) -> dict[str, tf.Tensor]:
    """Zeros shaped like one small batch of `spec`, to create a model's variables."""
    return {
        name: tf.zeros([1] + [8 if dim is None else dim for dim in s.shape[1:]], s.dtype)
        for name, s in spec.items()
    }


class Problem:
    """Base class of every problem. See the module docstring.

    Class attributes:
        input_modality: "symbol" (ids), "speech" (log-mel frames) or None
            (no inputs: a language model).
        num_shards: shards written per split.
        eval_metrics: names of the metrics the trainer reports for it.
    """

    input_modality: str | None = "symbol"
    num_shards: dict[str, int] = {TRAIN: 10, EVAL: 1, TEST: 1}
    eval_metrics: tuple[str, ...] = ("accuracy", "accuracy_per_sequence", "neg_log_perplexity")
    shuffle_buffer_size: int = 1024  # examples; speech problems hold less

    # Set by the registry on the class it registers (a subclass inherits it).
    registered_name: str | None = None

    @property
    def name(self) -> str:
        """The name the class was registered under, else its snake_case name."""
        return self.registered_name or default_name(type(self))

    @property
    def has_inputs(self) -> bool:
        return self.input_modality is not None

    # -- data generation ------------------------------------------------------------

    def generate_examples(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[dict]:
        """Yields the encoded examples of `split`, counting skips in `report`."""
        raise NotImplementedError(f"{type(self).__name__} must implement generate_examples")

    def prepare_data(self, data_dir: str, tmp_dir: str) -> None:
        """Hook run once before any split is written (vocabularies, downloads)."""

    def splits_to_generate(self) -> list[str]:
        return list(self.num_shards)

    def generate_data(self, data_dir: str, tmp_dir: str, overwrite: bool = False) -> DatagenReport:
        """Writes every split's shards (kept if they exist, unless `overwrite`).

        Raises:
            DataError: a split produced no usable example.
            shards.ShardError: shards to keep do not match their manifest.
        """
        report = DatagenReport(self.name)
        todo = []
        for split in self.splits_to_generate():
            existing = shards.existing_shards(data_dir, self.name, split)
            if existing and not overwrite:
                shards.check_shards(existing)  # never report damaged shards as kept
                report.split(split).reused = True
            else:
                todo.append(split)
        if not todo:
            return report
        tf.io.gfile.makedirs(data_dir)
        tf.io.gfile.makedirs(tmp_dir)
        self.prepare_data(data_dir, tmp_dir)
        for split in todo:
            split_report = report.split(split)
            for stale in shards.existing_shards(data_dir, self.name, split):
                tf.io.gfile.remove(stale)
            shards.remove_manifest(data_dir, self.name, split)
            paths = shards.shard_paths(data_dir, self.name, split, self.num_shards[split])
            examples = self.generate_examples(data_dir, tmp_dir, split, split_report)
            split_report.written = shards.write_shards(examples, paths, self.stored_lengths)
            if split_report.written == 0:
                for path in paths:
                    tf.io.gfile.remove(path)
                shards.remove_manifest(data_dir, self.name, split)
                raise DataError(
                    f"{self.name}: the {split} split has no usable example "
                    f"({dict(split_report.skipped) or 'no raw data found'}); "
                    f"check the raw data in {tmp_dir}."
                )
        return report

    # -- reading and featurization --------------------------------------------------

    def example_spec(self) -> dict[str, Any]:
        """`tf.io.parse_single_example` features of one stored record."""
        return {
            "inputs": tf.io.VarLenFeature(tf.int64),
            "targets": tf.io.VarLenFeature(tf.int64),
        }

    def decode_example(self, serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        """One serialized record -> dense tensors (int64 lists become int32)."""
        parsed = tf.io.parse_single_example(serialized, self.example_spec())
        example = {}
        for name, value in parsed.items():
            if isinstance(value, tf.sparse.SparseTensor):
                value = tf.sparse.to_dense(value)
            if value.dtype == tf.int64:
                value = tf.cast(value, tf.int32)
            example[name] = value
        return example

    def preprocess_example(
        self,
        example: dict,
        mode: str,
        hparams: HParams,
        seed: tf.Tensor | None = None,
        others: dict | None = None,
    ) -> dict:
        """Stored example -> model features. The default keeps inputs/targets.

        `seed` (int64 `[2]`, training only) makes random augmentation repeatable;
        `others` (training only) is a batch of `others_wanted(hparams)` other
        decoded training examples, ragged, for augmentations that mix them in.
        """
        del mode, hparams, seed, others
        keep = ("inputs", "targets") if self.has_inputs else ("targets",)
        return {name: example[name] for name in keep}

    def others_wanted(self, hparams: HParams) -> int:
        """How many other training examples `preprocess_example` mixes into each.

        They are its `others`; 0, the default, hands it none.
        """
        del hparams
        return 0

    # Lengths come in two units. Stored lengths are what datagen writes and
    # the manifest records (tokens; PCM samples for a waveform), so the
    # featurization may change after datagen. Model lengths are what the
    # length limits count (tokens; feature frames), from a featurized example
    # (`model_lengths`) or from a split's manifest without reading it
    # (`model_lengths_of_stored`). `batching_length` is T2T's one length per
    # example that bucketing and `batch_size` count.

    def batching_length(self, model_lengths: dict, hparams: HParams):
        """The length bucketing, `batch_size` and `max_length` count: T2T's longest feature.

        Speech overrides it to count frames x mel bins.

        Args:
            model_lengths: "inputs" (if any) and "targets", as
                `model_lengths` gives them: one example's scalar tensors, or
                arrays over many (the same rule serves the pipeline and the
                length report).
            hparams: the run's hparams.

        Returns:
            A scalar tensor, or an array over the examples.
        """
        del hparams
        present = [model_lengths[n] for n in ("inputs", "targets") if n in model_lengths]
        return functools.reduce(tf.maximum, present)

    def batch_spec(self, hparams: HParams) -> dict[str, tf.TensorSpec]:
        """The specs of one batch of model features (what `preprocess_example` makes)."""
        del hparams
        spec = {"targets": tf.TensorSpec([None, None], tf.int32)}
        if self.has_inputs:
            spec["inputs"] = tf.TensorSpec([None, None], tf.int32)
        return spec

    def model_lengths(self, features: dict) -> dict[str, tf.Tensor]:
        """One featurized example's sequence lengths: "inputs" (if any) and "targets".

        Tokens, or frames for speech inputs: what `max_input_seq_length` and
        `max_target_seq_length` limit.
        """
        lengths = {"targets": tf.shape(features["targets"])[0]}
        if "inputs" in features:
            lengths["inputs"] = tf.shape(features["inputs"])[0]
        return lengths

    def stored_lengths(self, example: dict) -> dict[str, int]:
        """One stored example's lengths, as datagen records them in the split's manifest.

        Stored units (tokens; PCM samples for a speech waveform), so that
        featurization hparams can change after datagen.
        """
        return {name: len(example[name]) for name in ("inputs", "targets") if name in example}

    def model_lengths_of_stored(self, stored_lengths: dict, hparams: HParams) -> dict:
        """What `model_lengths` gives for a split's examples, without reading them.

        Args:
            stored_lengths: `{name: array over the split}` of
                `stored_lengths` (`shards.read_manifest_lengths`).
            hparams: the run's hparams (speech frames depend on them).

        Returns:
            "inputs" (if any) and "targets": arrays over the split.
        """
        del hparams
        names = [name for name in ("inputs", "targets") if name in stored_lengths]
        return {name: stored_lengths[name] for name in names}

    def stored_seconds(self, stored_lengths: dict):
        """Seconds of audio of each of a split's examples, or None (not audio)."""
        del stored_lengths
        return None

    def padded_shapes(self, limit, hparams: HParams) -> dict:
        """Static-shape mode: each feature's padded dims (batch excluded) in a bucket.

        The bucket admits example lengths up to `limit`. Features not listed
        keep the batch's own padding.
        """
        del hparams
        shapes = {"targets": [limit]}
        if self.has_inputs:
            shapes["inputs"] = [limit]
        return shapes

    # -- vocabulary, hparams, metrics ---------------------------------------------------

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        raise NotImplementedError(f"{type(self).__name__} must implement feature_encoders")

    def add_hparams(self, hparams: HParams) -> HParams:
        """Adds the problem's own hparams (T2T's `problem.hparams`). Returns hparams."""
        return hparams

    def hparams_read(self) -> tuple[str, ...]:
        """The hparams featurization reads (see training/hparams_usage.py)."""
        return ()

    def check_hparams(self, hparams: HParams) -> None:
        """Raises `HParamsError` for a value of its own hparams it cannot use."""

    def model_kwargs(self, data_dir: str) -> dict:
        """What the model needs to know about the data: modality and vocab sizes."""
        encoders = self.feature_encoders(data_dir)
        kwargs = {
            "input_modality": self.input_modality,
            "target_vocab_size": encoders["targets"].vocab_size,
        }
        if self.input_modality == "symbol":
            kwargs["input_vocab_size"] = encoders["inputs"].vocab_size
        return kwargs

    def has_split(self, data_dir: str, split: str) -> bool:
        """Whether datagen wrote shards of `split` into `data_dir`."""
        return bool(shards.existing_shards(data_dir, self.name, split))

    def decode_splits(self, data_dir: str, split: str) -> list[str]:
        """The splits the decoder reports, each on its own, for `split` (a mix: one per member)."""
        del data_dir
        return [split]

    def manifest_lengths(self, data_dir: str, split: str) -> dict | None:
        """The stored lengths datagen recorded for `split` (`shards.read_manifest_lengths`)."""
        return shards.read_manifest_lengths(data_dir, self.name, split)

    def require_data(self, data_dir: str, split: str) -> list[str]:
        """The shard paths of `split`, checked against datagen's manifest.

        Raises:
            DataError: there are none (the message says which command makes them).
            shards.ShardError: a shard is truncated, missing or foreign.
        """
        paths = shards.existing_shards(data_dir, self.name, split)
        if not paths:
            raise DataError(
                f"no {split} data for problem {self.name} in {data_dir}: run "
                f"t2t-lite-datagen --problem={self.name} --data_dir={data_dir} "
                "--tmp_dir=<raw data dir> (or pass --generate_data to the trainer)."
            )
        shards.check_shards(paths)
        return paths

    def vocab_path(self, data_dir: str, filename: str) -> str:
        return os.path.join(data_dir, filename)
