"""t2t-lite-trainer end to end: resume after SIGKILL, hparams checks, NaN guard,
XLA with static shapes, two workers on loopback, and learning
algorithmic_reverse_binary40 to dev sequence accuracy >= 0.99."""

import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest
import tensorflow as tf

from tests.helpers import run_command, write_usr_dir

PROBLEM = "algorithmic_identity_binary40"
TINY = (
    "hidden_size=32,filter_size=64,num_heads=2,num_hidden_layers=1,batch_size=512,"
    "max_length=48,learning_rate_warmup_steps=50"
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("trainer_data")
    datagen = run_command("t2t-lite-datagen", f"--problem={PROBLEM}", f"--data_dir={path}")
    assert datagen.returncode == 0, datagen.stderr[-3000:]
    return str(path)


def trainer_args(data_dir, output_dir, *extra, hparams=TINY):
    return [
        "t2t-lite-trainer",
        f"--problem={PROBLEM}",
        "--hparams_set=transformer_tiny",
        f"--hparams={hparams}",
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
        "--eval_steps=2",
        "--eval_decode_examples=8",
        "--random_seed=1",
        *extra,
    ]


def checkpoint_steps(output_dir):
    state = tf.train.get_checkpoint_state(str(output_dir))
    if state is None:
        return []
    return [int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths]


def test_killed_run_resumes_and_all_checkpoints_load(data_dir, tmp_path):
    output_dir = tmp_path / "run"
    args = trainer_args(
        data_dir,
        output_dir,
        "--train_steps=80",
        "--save_checkpoints_steps=10",
        "--iterations_per_loop=5",
        "--log_step_count_steps=10",
        "--schedule=train",
    )
    log = open(tmp_path / "first_run.log", "w")  # a file: a full pipe would block
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 600
    while time.time() < deadline and not [s for s in checkpoint_steps(output_dir) if s >= 20]:
        assert process.poll() is None, (tmp_path / "first_run.log").read_text()[-2000:]
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    log.close()
    killed_at = max(checkpoint_steps(output_dir))
    assert 20 <= killed_at < 80

    resumed = run_command(*args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.search(rf"resumed from .*ckpt-{killed_at} at step {killed_at}", resumed.stderr)
    steps = checkpoint_steps(output_dir)
    assert steps[-1] == 80
    for step in steps:
        reader = tf.train.load_checkpoint(str(output_dir / f"ckpt-{step}"))
        names = reader.get_variable_to_shape_map()
        assert any(name.startswith("optimizer/") for name in names)
        assert any(name.startswith("model/") for name in names)
        assert reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == step


def check_length_report(data_dir, output_dir, stderr):
    """The run logged and wrote, before its first step, what its length limits
    keep of each split (every example: identity_binary40 is within max_length)."""
    report = json.loads((output_dir / "length_report.json").read_text())
    assert report["limits"] == {"max_length": 48}
    for split in ("train", "dev"):
        manifest = os.path.join(data_dir, f"{PROBLEM}-{split}-manifest.json")
        with open(manifest) as handle:
            records = json.load(handle)["records"]
        counts = report["splits"][split]
        assert counts["examples"] == counts["kept"] == records and counts["dropped"] == {}
        assert f"  {split}: all {records:,} examples" in stderr
    assert "example lengths, with limits max_length=48:" in stderr


def test_resume_with_changed_hparams_is_refused(data_dir, tmp_path, user_stderr_lines):
    output_dir = tmp_path / "run"
    base = ["--train_steps=5", "--schedule=train", "--iterations_per_loop=5"]
    # The thread flag is checked here, on a run the test makes anyway.
    first = run_command(
        *trainer_args(data_dir, output_dir, *base, "--intra_op_parallelism_threads=1")
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "CPU threads: intra-op 1, inter-op 0 (0: TF's choice" in first.stderr
    check_length_report(data_dir, output_dir, first.stderr)
    saved_flags = (output_dir / "flags.json").read_text()
    changed_hparams = TINY.replace("hidden_size=32", "hidden_size=16")
    changed = run_command(*trainer_args(data_dir, output_dir, *base, hparams=changed_hparams))
    assert changed.returncode == 1
    assert user_stderr_lines(changed.stderr) == [  # one line, no traceback around it
        f"t2t-lite-trainer: error: {output_dir} holds a run with different hparams: "
        "hidden_size (saved 32, now 16); use a new --output_dir or the same hparams."
    ]
    assert (output_dir / "flags.json").read_text() == saved_flags  # nothing rewritten
    # Hparams the model cannot train leave no run behind to refuse the fix.
    refused_dir = tmp_path / "refused"
    refused = run_command(
        *trainer_args(
            data_dir,
            refused_dir,
            *base,
            hparams=f"{TINY},intermediate_ctc_layer=1,intermediate_ctc_weight=0.3",
        )
    )
    assert refused.returncode == 1
    assert user_stderr_lines(refused.stderr) == [
        "t2t-lite-trainer: error: intermediate_ctc_layer=1 reads an encoder layer below "
        "the last, but this model has 1: use 2 or more, or set "
        "intermediate_ctc_layer=0,intermediate_ctc_weight=0."
    ]
    assert not (refused_dir / "hparams.json").exists()
    phonemes = run_command(
        *trainer_args(data_dir, refused_dir, *base, hparams=f"{TINY},phoneme_ctc_weight=0.3")
    )
    assert phonemes.returncode == 1
    assert user_stderr_lines(phonemes.stderr) == [
        "t2t-lite-trainer: error: hparam phoneme_ctc_weight > 0 trains a phoneme CTC head "
        f"on a speech problem's transcripts, but {PROBLEM} is not speech: set "
        "phoneme_ctc_weight=0."
    ]
    assert not (refused_dir / "hparams.json").exists()
    same_values = ",".join(reversed(TINY.split(",")))  # same values, another spelling
    same = run_command(
        *trainer_args(
            data_dir,
            output_dir,
            "--train_steps=10",
            "--schedule=train",
            "--iterations_per_loop=5",
            hparams=same_values,
        )
    )
    assert same.returncode == 0, same.stderr[-3000:]
    assert checkpoint_steps(output_dir)[-1] == 10
    saved = json.loads((output_dir / "hparams.json").read_text())
    assert saved["hidden_size"] == 32 and "flags.json" in os.listdir(output_dir)


def test_injected_nan_stops_with_step_and_keeps_checkpoint(data_dir, tmp_path):
    usr = write_usr_dir(
        tmp_path / "nan_usr",
        """
        import keras
        import tensorflow as tf
        from t2t_lite import registry
        from t2t_lite.models.transformer import Transformer

        @registry.register_model
        class NanAfterSevenSteps(Transformer):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.training_calls = keras.Variable(0, dtype="int32", trainable=False)

            def call(self, features, training=None):
                logits = super().call(features, training=training)
                if training:
                    self.training_calls.assign_add(1)
                    poison = tf.where(self.training_calls > 7, float("nan"), 0.0)
                    logits = logits + poison
                return logits
        """,
    )
    output_dir = tmp_path / "run"
    result = run_command(
        *trainer_args(
            data_dir,
            output_dir,
            f"--t2t_usr_dir={usr}",
            "--model=nan_after_seven_steps",
            "--train_steps=20",
            "--save_checkpoints_steps=5",
            "--iterations_per_loop=5",
            "--schedule=train",
        )
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "the loss became nan at step 8; training stopped" in last
    assert last.endswith("ckpt-5.")
    assert checkpoint_steps(output_dir) == [5]
    reader = tf.train.load_checkpoint(str(output_dir / "ckpt-5"))
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
            assert tf.reduce_all(tf.math.is_finite(value)), name


def test_xla_static_shapes_training_compiles(data_dir, tmp_path):
    # XLA writes every program it compiles to --xla_dump_to: the proof that
    # the training step itself was compiled, not a log line.
    dump = tmp_path / "xla_dump"
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={dump}"}
    result = run_command(
        *trainer_args(
            data_dir,
            tmp_path / "run",
            "--xla_compile",
            "--train_steps=6",
            "--iterations_per_loop=3",
            "--log_step_count_steps=3",
            "--schedule=train",
            hparams=TINY + ",length_bucket_step=2.0",
        ),
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [float(x) for x in re.findall(r"step \d+/6: loss ([0-9.]+)", result.stderr)]
    assert len(losses) == 2 and all(loss > 0 for loss in losses)
    compiled = [p.name for p in dump.glob("*replica_step*")] if dump.exists() else []
    assert compiled, sorted(p.name for p in dump.glob("*"))[:20] if dump.exists() else "no dump"


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_workers_on_loopback_finish_with_equal_weights(data_dir, tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    output_dir = tmp_path / "run"
    processes = []
    for index in range(2):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}
        )
        args = trainer_args(
            data_dir,
            output_dir,
            "--strategy=auto",
            "--train_steps=12",
            "--save_checkpoints_steps=6",
            "--iterations_per_loop=3",
            "--schedule=train",
        )
        processes.append(
            subprocess.Popen(
                args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    outputs = [process.communicate(timeout=900) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]
        assert "distribution strategy: multi_worker" in stderr
    checksums = [re.search(r"final weights checksum: (\S+)", out).group(1) for out, _ in outputs]
    assert checksums[0] == checksums[1]
    assert checkpoint_steps(output_dir) == [6, 12]
    assert not [name for name in os.listdir(output_dir) if name.startswith(".workertemp")]


REVERSE_TRAIN_STEPS = 6000


@pytest.mark.slow
def test_reverse_binary40_reaches_dev_sequence_accuracy_099(tmp_path):
    """From datagen (`--generate_data`) to greedy decoding of all 1,000 dev
    sequences (1-40 symbols): sequence accuracy >= 0.99 in a few minutes."""
    output_dir = tmp_path / "run"
    result = run_command(
        "t2t-lite-trainer",
        "--problem=algorithmic_reverse_binary40",
        "--hparams_set=transformer_algorithmic_tiny",
        "--generate_data",
        f"--data_dir={tmp_path / 'data'}",
        f"--tmp_dir={tmp_path / 'tmp'}",
        f"--output_dir={output_dir}",
        f"--train_steps={REVERSE_TRAIN_STEPS}",
        f"--local_eval_frequency={REVERSE_TRAIN_STEPS}",
        f"--save_checkpoints_steps={REVERSE_TRAIN_STEPS}",
        "--eval_decode_examples=1000",
        "--random_seed=1",
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (output_dir / "eval_results.jsonl").read_text().splitlines()
    final = json.loads(lines[-1])
    assert final["step"] == REVERSE_TRAIN_STEPS
    assert final["decode_sequence_accuracy"] >= 0.99, final


def test_warm_start_takes_the_weights_not_the_step_and_refuses_a_misfit(
    data_dir, tmp_path, user_stderr_lines
):
    source = tmp_path / "source"
    trained = run_command(*trainer_args(data_dir, source, "--train_steps=20", "--schedule=train"))
    assert trained.returncode == 0, trained.stderr[-3000:]
    warm = tmp_path / "warm"
    # train_steps=0: the run stops right after its start, holding what it started from.
    started = run_command(
        *trainer_args(data_dir, warm, "--train_steps=0", f"--warm_start_from={source}")
    )
    assert started.returncode == 0, started.stderr[-3000:]
    assert "warm-started the model's weights from" in started.stderr
    checksum = re.compile(r"final weights checksum: (\S+)")
    assert checksum.search(started.stdout).group(1) == checksum.search(trained.stdout).group(1)
    misfit = run_command(
        *trainer_args(
            data_dir,
            tmp_path / "misfit",
            "--train_steps=1",
            f"--warm_start_from={source}",
            hparams=TINY.replace("hidden_size=32", "hidden_size=16"),
        )
    )
    assert misfit.returncode == 1
    # The length report, then one error line.
    [error] = [line for line in user_stderr_lines(misfit.stderr) if "error" in line]
    assert error == user_stderr_lines(misfit.stderr)[-1]
    assert "its weights do not fit this model" in error and str(source) in error
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = run_command(
        *trainer_args(data_dir, tmp_path / "m", "--train_steps=1", f"--warm_start_from={empty}")
    )
    assert missing.returncode == 1 and "holds no checkpoint" in missing.stderr
