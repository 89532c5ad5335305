"""Mixed problems (T2T's MultiProblem): training draws members by weight, dev and
test stay each member's own, and the commands take a mix like any problem."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import pipeline, shards
from t2t_lite.data.mixed_problem import WEIGHTS_HPARAM, MixedProblem
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.hparam import HParamsError, create_hparams
from t2t_lite.problems import mini_librispeech, speechocean762
from t2t_lite.problems.algorithmic import AlgorithmicIdentityBinary40
from tests.data.conftest import SmallReverse
from tests.helpers import problem_source, run_command, train_with_commands, write_usr_dir

IDENTITY, REVERSE = "algorithmic_identity_binary40", "algorithmic_reverse_binary40"


class SmallIdentity(AlgorithmicIdentityBinary40):
    """algorithmic_identity_binary40 (the name it inherits) with few examples."""

    split_sizes = {TRAIN: 600, EVAL: 50, TEST: 50}
    num_shards = {TRAIN: 4, EVAL: 1, TEST: 1}


class CopyOrReverse(MixedProblem):
    members = (IDENTITY, REVERSE)
    weights = (3.0, 1.0)


@pytest.fixture(scope="module")
def mix_data(tmp_path_factory):
    data_dir = str(tmp_path_factory.mktemp("mix_data"))
    for member in (SmallIdentity(), SmallReverse()):
        member.generate_data(data_dir, data_dir + "/tmp")
    return CopyOrReverse(), data_dir


def _member_of(inputs: np.ndarray, targets: np.ndarray) -> str | None:
    """Which member wrote an example (None for a palindrome, which both would)."""
    inputs, targets = inputs[inputs > 1], targets[targets > 1]  # no padding, no EOS
    if np.array_equal(inputs, inputs[::-1]):
        return None
    return IDENTITY if np.array_equal(inputs, targets) else REVERSE


@pytest.mark.parametrize(
    "override, identity_share",
    [("", 0.75), (f"{WEIGHTS_HPARAM}=[1,3]", 0.25)],
    ids=["class weights", "weights hparam"],
)
def test_training_draws_each_member_by_its_weight(mix_data, override, identity_share):
    problem, data_dir = mix_data
    hparams = problem.add_hparams(registry.hparams("transformer_tiny"))
    hparams.parse(f"batch_size=256,max_length=48,{override}".rstrip(","))
    counts = collections.Counter()
    for batch in pipeline.make_dataset(problem, TRAIN, data_dir, hparams, seed=7).take(400):
        for inputs, targets in zip(batch["inputs"].numpy(), batch["targets"].numpy(), strict=True):
            counts[_member_of(inputs, targets)] += 1
    drawn = counts[IDENTITY] + counts[REVERSE]
    assert drawn > 3000  # each member's 600 examples, repeated
    # Weights 3:1 (or 1:3). Palindromes (about 1 in 9 of either member's) are
    # left out of both counts alike, so the share stays (binomial sd < 0.008).
    assert abs(counts[IDENTITY] / drawn - identity_share) < 0.03, counts


def test_a_weights_hparam_that_does_not_fit_the_members_is_one_sentence(mix_data):
    problem = mix_data[0]
    for weights in ("[1,2,3]", "[1,0]"):  # checked as the hparams are made, before a run
        with pytest.raises(HParamsError, match=r"must give .* 2 members .* one positive weight"):
            create_hparams("transformer_tiny", f"{WEIGHTS_HPARAM}={weights}", problem)


def test_dev_and_test_are_each_members_own(mix_data):
    problem, data_dir = mix_data
    identity_test = shards.existing_shards(data_dir, IDENTITY, TEST)
    reverse_test = shards.existing_shards(data_dir, REVERSE, TEST)
    assert problem.require_data(data_dir, TEST) == identity_test + reverse_test
    assert problem.require_data(data_dir, f"{TEST}_{REVERSE}") == reverse_test
    assert problem.decode_splits(data_dir, TEST) == [f"test_{IDENTITY}", f"test_{REVERSE}"]
    assert problem.decode_splits(data_dir, f"dev_{IDENTITY}") == [f"dev_{IDENTITY}"]
    assert problem.has_split(data_dir, f"{EVAL}_{IDENTITY}")
    lengths = problem.manifest_lengths(data_dir, TRAIN)
    assert len(lengths["targets"]) == 1200
    with pytest.raises(DataError, match=r"no split 'test_nobody'.*<split>_<member>"):
        problem.require_data(data_dir, "test_nobody")


def test_members_that_cannot_share_a_model_are_refused(tmp_path):
    class Mismatched(MixedProblem):
        members = (IDENTITY, "algorithmic_addition_decimal40")
        weights = (1.0, 1.0)

    with pytest.raises(DataError, match="encode inputs differently"):
        Mismatched().feature_encoders(str(tmp_path))

    class SpeechAndText(MixedProblem):
        members = (IDENTITY, "spoken_synth")
        weights = (1.0, 1.0)

    with pytest.raises(ValueError, match="different inputs"):
        _ = SpeechAndText().input_modality

    class Negative(MixedProblem):
        members = (IDENTITY, REVERSE)
        weights = (1.0, 0.0)

    with pytest.raises(ValueError, match="must be positive"):
        _ = Negative().member_problems


def test_real_speech_mix_is_registered_over_the_real_corpora():
    problem = registry.problem("real_speech_mix")
    assert problem.members == ("mini_librispeech", "speechocean762", "spoken_synth")
    assert [m.name for m in problem.member_problems] == list(problem.members)
    assert problem.input_modality == "speech"
    assert problem.mixing_weights.sum() == pytest.approx(1.0)


class SmallMini(mini_librispeech.MiniLibrispeech):
    num_shards = {TRAIN: 1, EVAL: 1, TEST: 1}
    workers = 2


class SmallOcean(speechocean762.Speechocean762):
    dev_speakers = 1
    num_shards = {TRAIN: 1, EVAL: 1, TEST: 1}
    workers = 2


def _ids_and_speakers(paths: list[str]) -> tuple[set[str], set[str]]:
    spec = {
        "utterance_id": tf.io.FixedLenFeature([], tf.string),
        "speaker_id": tf.io.FixedLenFeature([], tf.string, default_value=""),
    }
    examples = list(shards.read_examples(paths, spec))
    ids = {e["utterance_id"].numpy().decode() for e in examples}
    return ids, {e["speaker_id"].numpy().decode() for e in examples}


def test_no_members_test_speech_is_in_any_members_training_data(
    tmp_path, mini_librispeech_mini, speechocean762_mini
):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(mini_librispeech_mini / "LibriSpeech")
    (raw / "speechocean762").symlink_to(speechocean762_mini / "speechocean762")
    data_dir = str(tmp_path / "data")
    SmallMini().generate_data(data_dir, str(raw))
    SmallOcean().generate_data(data_dir, str(raw))

    class RealMix(MixedProblem):
        members = ("mini_librispeech", "speechocean762")
        weights = (1.0, 1.0)

    mix = RealMix()
    train_ids, train_speakers = _ids_and_speakers(mix.require_data(data_dir, TRAIN))
    assert len(train_ids) > 10
    for split in mix.decode_splits(data_dir, TEST) + mix.decode_splits(data_dir, EVAL):
        held_ids, held_speakers = _ids_and_speakers(mix.require_data(data_dir, split))
        assert held_ids and not held_ids & train_ids, split
        assert held_speakers and not held_speakers & train_speakers, split


def test_the_commands_train_and_decode_a_mix_member_by_member(tmp_path):
    usr = write_usr_dir(
        tmp_path / "usr",
        problem_source(
            "ToyCopy", "t2t_lite.problems.algorithmic.AlgorithmicIdentityBinary40",
            split_sizes={TRAIN: 200, EVAL: 10, TEST: 10}, num_shards={TRAIN: 1, EVAL: 1, TEST: 1},
        ),
        problem_source(
            "ToyReverse", "t2t_lite.problems.algorithmic.AlgorithmicReverseBinary40",
            split_sizes={TRAIN: 200, EVAL: 10, TEST: 12}, num_shards={TRAIN: 1, EVAL: 1, TEST: 1},
        ),
        problem_source(
            "ToyMix", "t2t_lite.data.mixed_problem.MixedProblem",
            members=("toy_copy", "toy_reverse"), weights=(1.0, 1.0),
        ),
    )  # fmt: skip
    data_dir, output_dir = train_with_commands(
        usr, "toy_mix", tmp_path, "--hparams_set=transformer_tiny", "--train_steps=3"
    )
    result = run_command(
        "t2t-lite-decoder", f"--t2t_usr_dir={usr}", f"--output_dir={output_dir}",
        "--decode_hparams=beam_size=1,batch_size=8",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("toy_mix ")] == [
        "toy_mix test_toy_copy",
        "toy_mix test_toy_reverse",
    ]
    assert "examples 10" in lines[0] and "examples 12" in result.stdout
    for member, count in (("toy_copy", 10), ("toy_reverse", 12)):
        written = (output_dir / f"decode_test_{member}.txt").read_text().splitlines()
        assert len(written) == count
