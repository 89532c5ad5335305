"""One model on several problems: T2T's `MultiProblem`, as a registered problem.

A mixed problem names registered member problems and the weight of each in
training. It is a problem like any other, so the trainer, decoder, exporter
and server take it unchanged:

    @registry.register_problem
    class RealSpeechMix(MixedProblem):
        members = ("mini_librispeech", "speechocean762", "spoken_synth")
        weights = (0.25, 0.35, 0.4)

    t2t-lite-datagen --problem=real_speech_mix ...   # each member's datagen
    t2t-lite-trainer --problem=real_speech_mix ...   # one model, one vocabulary

Data: the members' own shards in `data_dir`; nothing is copied. Training
draws each example from a member chosen at random with its weight
(`tf.data.Dataset.sample_from_datasets`, each member's stream shuffled and
repeated on its own), so a weight is a share of examples, as T2T's
`multiproblem` mixing was; T2T's hparam `multiproblem_per_task_threshold`
overrides them for a run (`--hparams=multiproblem_per_task_threshold=[0.4,0.45,0.15]`:
one weight a member, normalized). Dev and test are the members' own: the split
`dev` (or `test`) is every member's dev (test) read in turn, and
`<split>_<member>` one member's alone (`--dataset_split=test_mini_librispeech`);
the decoder decodes each member's test in turn and reports each (a WER over
several corpora at once says little). Any other split a member has (a
noisy test split, `test_pink_20db`) is read from the members that have it.

Members must agree on what the model sees (the input modality and the
targets' vocabulary); everything about featurization, lengths and hparams
is the first member's, so members should share a base class (e.g. speech
problems with byte targets).
"""

from __future__ import annotations

import functools

import numpy as np

from t2t_lite import registry
from t2t_lite.data import shards
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, DatagenReport, Problem
from t2t_lite.data.text_encoders import TextEncoder
from t2t_lite.hparam import HParams, HParamsError

# T2T's hparam for a mix's per-member weights ([3,1]); empty: the class's `weights`.
WEIGHTS_HPARAM = "multiproblem_per_task_threshold"


class MixedProblem(Problem):
    """Several registered problems trained as one (see the module docstring).

    Class attributes:
      members: the members' registered names; the first one's featurization,
        lengths and hparams are the mix's.
      weights: each member's share of the training examples (any positive
        numbers; normalized).
    """

    members: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()

    @functools.cached_property
    def member_problems(self) -> tuple[Problem, ...]:
        """The members, looked up in the registry (a mix of mixes is refused)."""
        if len(self.members) < 2 or len(self.weights) != len(self.members):
            raise ValueError(
                f"{self.name}: a mixed problem needs two or more members and one weight "
                f"each; got members {self.members} and weights {self.weights}."
            )
        if min(self.weights) <= 0:
            raise ValueError(f"{self.name}: mixing weights must be positive, got {self.weights}.")
        problems = tuple(registry.problem(name) for name in self.members)
        for member in problems:
            if isinstance(member, MixedProblem):
                raise ValueError(f"{self.name}: member {member.name} is itself a mix.")
            if member.input_modality != problems[0].input_modality:
                raise ValueError(
                    f"{self.name}: members {problems[0].name} and {member.name} take "
                    "different inputs; a mix trains one model on one kind of input."
                )
        return problems

    @property
    def primary(self) -> Problem:
        """The member whose featurization, lengths and hparams the mix uses."""
        return self.member_problems[0]

    @property
    def mixing_weights(self) -> np.ndarray:
        """`weights` normalized to sum to 1, in `members` order."""
        weights = np.asarray(self.weights, np.float64)
        return weights / weights.sum()

    def training_weights(self, hparams: HParams) -> np.ndarray:
        """The run's mixing weights: `WEIGHTS_HPARAM`'s if set, else `mixing_weights`.

        Raises:
            HParamsError: not one positive number for each member.
        """
        given = hparams.get(WEIGHTS_HPARAM)
        if not given:
            return self.mixing_weights
        weights = np.asarray(given, np.float64)
        if len(weights) != len(self.members) or not np.all(weights > 0):
            raise HParamsError(
                f"hparam {WEIGHTS_HPARAM}={list(given)} must give {self.name}'s "
                f"{len(self.members)} members ({', '.join(self.members)}) one positive "
                "weight each, as [w1,w2,...]."
            )
        return weights / weights.sum()

    @property
    def input_modality(self):  # type: ignore[override]
        return self.primary.input_modality

    @property
    def eval_metrics(self):  # type: ignore[override]
        return self.primary.eval_metrics

    @property
    def shuffle_buffer_size(self):  # type: ignore[override]
        return self.primary.shuffle_buffer_size

    # -- data generation ------------------------------------------------------------

    def generate_data(self, data_dir: str, tmp_dir: str, overwrite: bool = False) -> DatagenReport:
        """Each member's datagen in turn; the report lists "<member> <split>"."""
        report = DatagenReport(self.name)
        for member in self.member_problems:
            for split, split_report in member.generate_data(
                data_dir, tmp_dir, overwrite
            ).splits.items():
                report.splits[f"{member.name} {split}"] = split_report
        return report

    # -- splits ---------------------------------------------------------------------

    def member_split(self, split: str, data_dir: str | None = None) -> tuple[tuple, str]:
        """The members a split reads and their split.

        `test` -> (all, "test"), `test_<member>` -> ((member,), "test").
        Another split (e.g. a noisy test split, `test_pink_20db`) is read from
        the members that have it in `data_dir`.

        Raises:
          DataError: no member has the split.
        """
        for member in self.member_problems:
            suffix = f"_{member.name}"
            if split.endswith(suffix) and len(split) > len(suffix):
                return (member,), split[: -len(suffix)]
        if split in (TRAIN, EVAL, TEST) or data_dir is None:
            return self.member_problems, split
        having = tuple(m for m in self.member_problems if m.has_split(data_dir, split))
        if not having:
            raise DataError(
                f"{self.name} has no split {split!r}: use train, dev, test, "
                f"<split>_<member> or a split a member has (members: {', '.join(self.members)})."
            )
        return having, split

    def decode_splits(self, data_dir: str, split: str) -> list[str]:
        """The splits the decoder reports for `split`: one per member with data."""
        members, base = self.member_split(split, data_dir)
        if len(members) == 1:
            return [split]
        found = [m for m in members if shards.existing_shards(data_dir, m.name, base)]
        return [f"{base}_{member.name}" for member in found] or [split]

    def require_data(self, data_dir: str, split: str) -> list[str]:
        members, base = self.member_split(split, data_dir)
        return [path for member in members for path in member.require_data(data_dir, base)]

    def has_split(self, data_dir: str, split: str) -> bool:
        """Whether any member it reads has shards of `split`."""
        try:
            members, base = self.member_split(split, data_dir)
        except DataError:
            return False
        return any(shards.existing_shards(data_dir, m.name, base) for m in members)

    def manifest_lengths(self, data_dir: str, split: str) -> dict | None:
        members, base = self.member_split(split, data_dir)
        found = [member.manifest_lengths(data_dir, base) for member in members]
        if any(lengths is None for lengths in found):
            return None
        return {name: np.concatenate([f[name] for f in found]) for name in found[0]}

    # -- what the model sees: the first member's --------------------------------------

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        encoders = self.primary.feature_encoders(data_dir)
        for member in self.member_problems[1:]:
            other = member.feature_encoders(data_dir)
            for name, encoder in encoders.items():
                theirs = other.get(name)
                if type(theirs) is not type(encoder) or theirs.vocab_size != encoder.vocab_size:
                    raise DataError(
                        f"{self.name}: members {self.primary.name} and {member.name} encode "
                        f"{name} differently; a mix shares one vocabulary."
                    )
        return encoders

    def example_spec(self) -> dict:
        return self.primary.example_spec()

    def decode_example(self, serialized):
        return self.primary.decode_example(serialized)

    def preprocess_example(self, example, mode, hparams, seed=None, others=None):
        return self.primary.preprocess_example(example, mode, hparams, seed, others)

    def others_wanted(self, hparams: HParams) -> int:
        return self.primary.others_wanted(hparams)

    def batching_length(self, model_lengths: dict, hparams: HParams):
        return self.primary.batching_length(model_lengths, hparams)

    def batch_spec(self, hparams: HParams) -> dict:
        return self.primary.batch_spec(hparams)

    def model_lengths(self, features: dict) -> dict:
        return self.primary.model_lengths(features)

    def stored_lengths(self, example: dict) -> dict:
        return self.primary.stored_lengths(example)

    def model_lengths_of_stored(self, stored_lengths: dict, hparams: HParams) -> dict:
        return self.primary.model_lengths_of_stored(stored_lengths, hparams)

    def stored_seconds(self, stored_lengths: dict):
        return self.primary.stored_seconds(stored_lengths)

    def padded_shapes(self, limit, hparams: HParams) -> dict:
        return self.primary.padded_shapes(limit, hparams)

    def add_hparams(self, hparams: HParams) -> HParams:
        if WEIGHTS_HPARAM not in hparams:
            hparams.add_hparam(WEIGHTS_HPARAM, [], float)
        return self.primary.add_hparams(hparams)

    def hparams_read(self) -> tuple[str, ...]:
        return (WEIGHTS_HPARAM, *self.primary.hparams_read())

    def check_hparams(self, hparams: HParams) -> None:
        self.training_weights(hparams)
        self.primary.check_hparams(hparams)
