"""t2t-lite-decoder and t2t-lite-exporter on a tiny text run: inputs checked
before decoding, output line i for input line i, splits in record order with
`.inputs`, and the run directory as the source of truth."""

import pytest
import tensorflow as tf

from tests.helpers import run_command


def decoder(tiny_text_run, *extra):
    """The decoder on the run, given only --output_dir: the rest is in flags.json."""
    _, _, output_dir = tiny_text_run
    return run_command("t2t-lite-decoder", f"--output_dir={output_dir}", *extra)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0 1\n1 2 1\n", "line 2: symbol 2 is outside 0..1; inputs must be in the problem's"),
        ("0\n\n10110\n", "line 3: symbol 10110 is outside 0..1;"),
        ("0 " * 30 + "\n", "line 1 has 31 tokens (EOS included), more than this model takes (24,"),
    ],
)
def test_a_bad_text_line_is_one_line_naming_it(
    tiny_text_run, tmp_path, user_stderr_lines, text, expected
):
    inputs = tmp_path / "inputs.txt"
    inputs.write_text(text)
    out = tmp_path / "out.txt"
    result = decoder(tiny_text_run, f"--decode_from_file={inputs}", f"--decode_to_file={out}")
    assert result.returncode == 1
    lines = user_stderr_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"t2t-lite-decoder: error: {inputs} {expected}")
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_blank_lines_stay_blank_and_the_output_directory_is_made(
    tiny_text_run, tmp_path, user_stderr_lines
):
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("0 1\n\n1 1 0\n  \n\n0\n")  # 6 lines, 3 of them blank
    out = tmp_path / "new" / "dir" / "out.txt"
    result = decoder(
        tiny_text_run,
        f"--decode_from_file={inputs}",
        f"--decode_to_file={out}",
        "--decode_hparams=beam_size=2,return_beams=true",
        "--tmp_dir=/unused",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"decoded 6 lines of {inputs} into {out} (3 blank lines left blank)" in result.stdout
    assert user_stderr_lines(result.stderr) == [
        "t2t-lite-decoder: warning: --tmp_dir is ignored by t2t-lite-decoder."
    ]
    lines = out.read_text().split("\n")
    assert len(lines) == 7 and lines[-1] == ""  # 6 lines, each ended by a newline
    assert [i for i, line in enumerate(lines[:6]) if not line] == [1, 3, 4]
    for line in (lines[0], lines[2], lines[5]):  # beam, score, beam, score
        fields = line.split("\t")
        assert len(fields) == 4
        assert float(fields[1]) >= float(fields[3])


def _test_split_inputs(data_dir):
    """The test split's inputs as text, in record order (shard 0, then shard 1)."""
    paths = sorted(str(p) for p in data_dir.glob("tiny_binary-test-0000*-of-00002"))
    assert len(paths) == 2
    texts = []
    for record in tf.data.TFRecordDataset(paths):
        example = tf.train.Example.FromString(record.numpy())
        ids = example.features.feature["inputs"].int64_list.value
        texts.append(" ".join(str(i - 2) for i in ids if i >= 2))  # pad 0, EOS 1
    return texts


def test_split_is_decoded_in_record_order_with_inputs_beside(tiny_text_run):
    _, data_dir, output_dir = tiny_text_run
    result = decoder(tiny_text_run, "--dataset_split=test")
    assert result.returncode == 0, result.stderr[-3000:]
    written = output_dir / "decode_test.txt"
    expected = _test_split_inputs(data_dir)
    assert len(expected) == 7
    assert (output_dir / "decode_test.txt.inputs").read_text().splitlines() == expected
    assert (output_dir / "decode_test.txt.targets").read_text().splitlines() == expected
    assert len(written.read_text().splitlines()) == 7


@pytest.mark.parametrize("command", ["t2t-lite-decoder", "t2t-lite-exporter"])
@pytest.mark.parametrize(
    "flag, expected",
    [
        (
            "--problem=algorithmic_reverse_binary40",
            "--problem=algorithmic_reverse_binary40 does not match the run in {out}, trained "
            "with --problem=tiny_binary ({out}/flags.json); leave --problem out to use the run's.",
        ),
        (
            "--hparams=hidden_size=32",
            "--hparams sets hidden_size=32 (the run's 16), which does not match the run in "
            "{out} ({out}/hparams.json); leave --hparams out to use the run's.",
        ),
    ],
)
def test_flags_that_disagree_with_the_run_are_one_line(
    tiny_text_run, tmp_path, user_stderr_lines, command, flag, expected
):
    _, _, output_dir = tiny_text_run
    extra = [f"--export_dir={tmp_path / 'e'}"] if command == "t2t-lite-exporter" else []
    result = run_command(command, f"--output_dir={output_dir}", *extra, flag)
    assert result.returncode == 1
    assert user_stderr_lines(result.stderr) == [
        f"{command}: error: " + expected.format(out=output_dir)
    ]
    assert not (tmp_path / "e").exists()
