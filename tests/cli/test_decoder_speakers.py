"""t2t-lite-decoder breaks WER down by speaker on a corpus that names them: a
tiny model trained on the real speechocean762 recordings of shared/testdata."""

import json
import re

import jiwer
import pytest

from tests.helpers import TINY_SPEECH_RUN, run_command, train_user_problem


@pytest.fixture(scope="module")
def trained(tmp_path_factory, speechocean762_mini):
    """(usr_dir, data_dir, output_dir) of a 10-step run on the mini corpus."""
    return train_user_problem(
        tmp_path_factory.mktemp("decoder_speakers"),
        "Speechocean762Mini",
        "t2t_lite.problems.speechocean762.Speechocean762",
        ["--hparams_set=transformer_speech_small_real", f"--hparams={TINY_SPEECH_RUN}",
         "--train_steps=10", "--random_seed=3"],
        tmp_dir=speechocean762_mini,
        dev_speakers=1,
        num_shards={"train": 1, "dev": 1, "test": 1},
    )  # fmt: skip


def test_wer_of_children_and_adults_is_jiwers_over_their_own_lines(trained):
    usr, data_dir, output_dir = trained
    result = run_command(
        "t2t-lite-decoder",
        f"--t2t_usr_dir={usr}",
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
        "--decode_hparams=beam_size=1,batch_size=10,ctc_weight=1.0",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    hypotheses = (output_dir / "decode_test.txt").read_text().splitlines()
    references = (output_dir / "decode_test.txt.targets").read_text().splitlines()
    ids = (output_dir / "decode_test.txt.inputs").read_text().splitlines()
    assert len(ids) == 10
    # The mini test split: speaker 0003 is 6 years old, 0024 is 25; ids start
    # with the speaker's number (000030012 is 0003's).
    child = [i for i, utterance in enumerate(ids) if utterance.startswith("00003")]
    adult = [i for i, utterance in enumerate(ids) if utterance.startswith("00024")]
    assert len(child) == len(adult) == 5
    metrics = json.loads((output_dir / "decode_test.txt.metrics.json").read_text())
    for name, lines in (("children", child), ("adults", adult)):
        group = metrics["groups"][name]
        expected = jiwer.wer([references[i] for i in lines], [hypotheses[i] for i in lines])
        assert group["wer"] == pytest.approx(expected)
        assert (group["utterances"], group["speakers"]) == (5, 1)
        printed = re.search(rf"{name} WER ([0-9.]+) \(5 utterances, 1 speaker\)", result.stdout)
        assert float(printed.group(1)) == pytest.approx(expected, abs=1e-4)
    spread = metrics["per_speaker_wer"]
    assert spread["speakers"] == 2
    assert spread["min"] == pytest.approx(
        min(metrics["groups"][g]["wer"] for g in metrics["groups"])
    )
    assert spread["max"] == pytest.approx(
        max(metrics["groups"][g]["wer"] for g in metrics["groups"])
    )
