"""`scripts/pocketsphinx_baseline.py` on real Mini LibriSpeech records, with a
stand-in `pocketsphinx` module (the real one is a benchmark's dependency, not
the tests'): it reads the records the decoder reads, keeps their order when
split over processes, and writes what the decoder writes."""

import json
import subprocess
import sys

import pytest

from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.input_batches import record_waveform_batches
from t2t_lite.problems import mini_librispeech
from tests.helpers import SCRIPTS, generate_from_tree

# Hears only how many 16-bit samples an utterance had: enough to tell
# whether each hypothesis is its own utterance's.
FAKE_POCKETSPHINX = """
class _Hypothesis:
    def __init__(self, text):
        self.hypstr = text


class Decoder:
    def __init__(self, samprate):
        assert samprate == 16000, samprate
        self._bytes = 0

    def start_utt(self):
        self._bytes = 0

    def process_raw(self, pcm, full_utt=False):
        self._bytes += len(pcm)

    def end_utt(self):
        pass

    def hyp(self):
        return _Hypothesis(f"SAMPLES {self._bytes // 2}")
"""


@pytest.fixture(scope="module")
def test_records(tmp_path_factory, mini_librispeech_mini):
    """(data_dir, sample counts, references) of the 6 test recordings, in record order."""
    problem = mini_librispeech.MiniLibrispeech()
    data_dir = generate_from_tree(problem, tmp_path_factory.mktemp("ps"), mini_librispeech_mini)
    encoder, lengths, references = ByteTextEncoder(), [], []
    for _, batch_lengths, targets, _ in record_waveform_batches(problem, data_dir, "test", 16):
        lengths += [int(n) for n in batch_lengths]
        references += [encoder.decode([t for t in row if t > 1]) for row in targets]
    return data_dir, lengths, references


def _run(tmp_path, data_dir: str, *flags: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "fake"
    (fake / "pocketsphinx").mkdir(parents=True, exist_ok=True)
    (fake / "pocketsphinx" / "__init__.py").write_text(FAKE_POCKETSPHINX)
    command = [sys.executable, str(SCRIPTS / "pocketsphinx_baseline.py"),
               "--problem=mini_librispeech", f"--data_dir={data_dir}", *flags]  # fmt: skip
    env = {"PYTHONPATH": str(fake), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def test_processes_keep_record_order_and_write_what_the_decoder_writes(tmp_path, test_records):
    data_dir, lengths, references = test_records
    assert len(lengths) == 6  # two test readers, three recordings each
    outputs = {}
    for jobs in (1, 4):
        out = tmp_path / f"hypotheses_{jobs}.txt"
        done = _run(tmp_path, data_dir, f"--jobs={jobs}", f"--out={out}")
        assert done.returncode == 0, done.stderr[-3000:]
        assert "6 utterances" in done.stdout, done.stdout
        outputs[jobs] = out.read_text().splitlines()
        assert (tmp_path / f"hypotheses_{jobs}.txt.targets").read_text().splitlines() == references
        metrics = json.loads((tmp_path / f"hypotheses_{jobs}.txt.metrics.json").read_text())
        assert metrics["examples"] == 6 and metrics["jobs"] == jobs, metrics
        # Two words, neither the reference's, against references of more: all wrong.
        assert metrics["wer"] == pytest.approx(1.0), metrics
    # Each hypothesis is its own utterance's, however the records were split.
    assert outputs[1] == outputs[4] == [f"samples {n}" for n in lengths]


def test_no_processes_is_refused_in_one_sentence(tmp_path, test_records):
    done = _run(tmp_path, test_records[0], "--jobs=0")
    assert done.returncode == 1
    assert done.stderr.strip() == "pocketsphinx_baseline: --jobs=0: give 1 or more processes."
