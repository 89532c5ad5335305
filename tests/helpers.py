"""Plain helpers that several test files share: commands run as a user runs
them, user directories, tiny model settings, one-batch training, and requests
with no speech in them.

Fixtures belong in the `conftest.py` files; this module holds what a test
file imports by name (`from tests.helpers import run_command`), including
values that `pytest.mark.parametrize` needs before any fixture exists. Under
`--import-mode=importlib` pytest imports `tests/` as a namespace package of
the rootdir, so this import needs no `sys.path` entry; `tests/conftest.py`
registers the module for assertion rewriting.
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import textwrap
import types

import numpy as np
import tensorflow as tf

from t2t_lite.registry import default_name
from t2t_lite.training.losses import padded_cross_entropy, summed_ctc_loss

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"

# -- tiny model settings ---------------------------------------------------------------------

# The smallest Transformer the tests build: it trains a toy task in a few
# steps on two CPU cores.
TINY_TRANSFORMER = "hidden_size=16,filter_size=32,num_heads=2,num_hidden_layers=1"
# Dropout off: a training step then computes what inference does (a loss
# checked by hand), and a few steps fit one batch.
NO_DROPOUT = "layer_prepostprocess_dropout=0.0,attention_dropout=0.0,relu_dropout=0.0"
# TINY_TRANSFORMER with a CTC head (word times, joint decoding) and targets of
# 16 bytes at most, for speech.
TINY_CTC_SPEECH = f"{TINY_TRANSFORMER},max_target_seq_length=16,ctc_loss_weight=0.3"
# Beam search for tiny models (two beams), and the same joint with a CTC head.
BEAM_DECODE = "beam_size=2,alpha=0.6,extra_length=8"
CTC_BEAM_DECODE = f"{BEAM_DECODE},ctc_weight=0.3"
# transformer_speech_small cut to one layer a side, for the commands' speech
# runs on a few dozen utterances at most; a batch is 400,000 frames x mel
# bins (50 s of audio).
TINY_SPEECH_RUN = (
    "hidden_size=32,filter_size=64,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
    "batch_size=400000"
)

# -- requests with no speech -----------------------------------------------------------------

# Waveform batches with no speech to find: no samples at all (a client's empty
# buffer), one sample, fewer samples than one frame, all NaN. What a model
# makes of them does not depend on its weights, so an untrained one serves.
DEGENERATE_WAVEFORMS = {
    "empty_1": np.zeros([1, 0]),
    "empty_2": np.zeros([2, 0]),
    "one_sample": np.full([1, 1], 0.5),
    "under_a_frame": np.full([2, 100], 0.25),
    "all_nan": np.full([2, 4000], np.nan),
}


def full_lengths(waveforms: np.ndarray) -> np.ndarray:
    """The `waveform_length` of a batch whose rows are all samples, no padding.

    Args:
        waveforms: `[batch, samples]`.

    Returns:
        int32 `[batch]`, each `samples`.

    Example:

    >>> full_lengths(np.zeros([2, 5])).tolist()
    [5, 5]
    """
    return np.full([len(waveforms)], waveforms.shape[1], np.int32)


# -- commands and user directories -----------------------------------------------------------


def run_command(*args, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    """Runs a command as a user would, its output captured as text.

    Args:
        *args: the command and its arguments (paths may be `pathlib.Path`).
        timeout: seconds before the command is killed and the test fails.
        **kwargs: more `subprocess.run` arguments (`env`, `cwd`).

    Returns:
        The `subprocess.CompletedProcess`; a failing command does not raise.

    Example:

    >>> run_command("t2t-lite-trainer", "--registry_help").returncode
    0
    """
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kwargs)


# What TensorFlow and LiteRT write when they load (`t2t_lite.cli.quiet_start`
# keeps it out of a command's output), written out here rather than imported
# so that a change to the filter cannot also change what the tests look for.
LOAD_NOISE = ("I0000 ", "W0000 ", "E0000 ", "absl::InitializeLog", "oneDNN", "cuInit", "XNNPACK")
LONGEST_LINE = 300  # issue #42: no line of a command's output is longer


def assert_quiet_output(result: subprocess.CompletedProcess) -> None:
    """A command's stdout and stderr hold none of TensorFlow's or LiteRT's
    load-time lines and no line over `LONGEST_LINE` characters.

    Example:

    >>> assert_quiet_output(run_command("t2t-lite-trainer", "--registry_help"))
    """
    for line in (result.stdout + result.stderr).splitlines():
        assert not any(marker in line for marker in LOAD_NOISE), line[:LONGEST_LINE]
        assert len(line) <= LONGEST_LINE, f"a {len(line)}-character line: {line[:200]}..."


def problem_source(class_name: str, base: str, **attributes) -> str:
    """Source of a user-directory module that registers a problem subclass.

    Args:
        class_name: the new class; the registry names it in snake_case.
        base: the class it extends, as `"module.Class"`.
        **attributes: class attributes to set, written with `repr`.

    Returns:
        Python source, imports included.

    Example:

    >>> print(problem_source("Toy", "t2t_lite.problems.algorithmic.AlgorithmicIdentityBinary40",
    ...                      split_sizes={"train": 4}))
    from t2t_lite import registry
    from t2t_lite.problems.algorithmic import AlgorithmicIdentityBinary40
    <BLANKLINE>
    @registry.register_problem
    class Toy(AlgorithmicIdentityBinary40):
        split_sizes = {'train': 4}
    <BLANKLINE>
    """
    module, base_class = base.rsplit(".", 1)
    body = "".join(f"    {name} = {value!r}\n" for name, value in attributes.items())
    return (
        f"from t2t_lite import registry\nfrom {module} import {base_class}\n\n"
        f"@registry.register_problem\nclass {class_name}({base_class}):\n{body}"
    )


def write_usr_dir(path: pathlib.Path, *sources: str) -> pathlib.Path:
    """Makes `path` a user directory (`--t2t_usr_dir`) whose `__init__.py`
    holds `sources`, each dedented, one after another.

    Args:
        path: a directory to create (its parent must exist).
        *sources: Python source texts.

    Returns:
        `path`.

    Example:

    >>> usr = write_usr_dir(tmp_path / "usr", problem_source("Toy", "some.module.Base"))
    """
    path.mkdir()
    (path / "__init__.py").write_text("\n".join(textwrap.dedent(s) for s in sources))
    return path


def train_with_commands(usr_dir, problem: str, root: pathlib.Path, *trainer_flags, tmp_dir=None):
    """t2t-lite-datagen, then t2t-lite-trainer --schedule=train, as a user runs
    them; fails the test with the command's stderr if either fails.

    Args:
        usr_dir: the `--t2t_usr_dir` (or None).
        problem: the registered problem name.
        root: a directory; the data go to `root/data`, the run to `root/out`.
        *trainer_flags: the trainer's other flags (hparams, steps, seed).
        tmp_dir: datagen's `--tmp_dir` (the raw data), if it needs one.

    Returns:
        `(data_dir, output_dir)`.

    Example:

    >>> data_dir, output_dir = train_with_commands(
    ...     usr, "tiny_binary", tmp_path, "--hparams_set=transformer_tiny", "--train_steps=2")
    """
    data_dir, output_dir = root / "data", root / "out"
    common = [f"--problem={problem}", f"--data_dir={data_dir}"]
    if usr_dir is not None:
        common.insert(0, f"--t2t_usr_dir={usr_dir}")
    raw = [f"--tmp_dir={tmp_dir}"] if tmp_dir is not None else []
    datagen = run_command("t2t-lite-datagen", *common, *raw)
    assert datagen.returncode == 0, datagen.stderr[-3000:]
    assert_quiet_output(datagen)
    train = run_command(
        "t2t-lite-trainer", *common, f"--output_dir={output_dir}", "--schedule=train",
        *trainer_flags,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr[-3000:]
    assert_quiet_output(train)
    return data_dir, output_dir


def train_user_problem(
    root: pathlib.Path, class_name: str, base: str, trainer_flags, tmp_dir=None, **attributes
):
    """A problem subclass registered from a user directory, then datagen and
    training by the commands (`problem_source`, `write_usr_dir`,
    `train_with_commands`).

    Args:
        root: a new directory for the user directory, the data and the run.
        class_name / base / **attributes: the subclass (`problem_source`).
        trainer_flags: the trainer's other flags.
        tmp_dir: datagen's `--tmp_dir`, if it needs one.

    Returns:
        `(usr_dir, data_dir, output_dir)`; the problem's name is
        `class_name` in snake_case.

    Example:

    >>> usr, data_dir, output_dir = train_user_problem(
    ...     tmp_path, "Toy", "some.module.Base", ["--train_steps=2"], split_sizes={"train": 4})
    """
    usr = write_usr_dir(root / "usr", problem_source(class_name, base, **attributes))
    problem = default_name(types.SimpleNamespace(__name__=class_name))  # the registry's rule
    data_dir, output_dir = train_with_commands(usr, problem, root, *trainer_flags, tmp_dir=tmp_dir)
    return usr, data_dir, output_dir


def load_script(relative_path: str) -> types.ModuleType:
    """Imports a file of `scripts/` by its path: scripts/ is no package on sys.path.

    Args:
        relative_path: the file under `scripts/`, e.g. `"bench/common.py"`.

    Returns:
        The module, run as an import (its `__main__` block is not).

    Example:

    >>> script = load_script("word_time_accuracy.py")
    """
    path = SCRIPTS / relative_path
    name = "scripts_" + "_".join(pathlib.PurePosixPath(relative_path).with_suffix("").parts)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- tiny models -----------------------------------------------------------------------------


def random_sequences(rng: np.random.Generator, batch: int, length: int, vocab_size: int):
    """Target-like ids: each row 1 to `length - 2` ids in `[2, vocab_size)`,
    then EOS (1), then padding (0).

    Args:
        rng: the generator; each row draws its length, then its ids.
        batch: rows.
        length: columns.
        vocab_size: one more than the largest id.

    Returns:
        int32 `[batch, length]`.

    Example:

    >>> ids = random_sequences(np.random.default_rng(0), 2, 5, 12)
    >>> ids.shape, int((ids == 1).sum())
    ((2, 5), 2)
    """
    ids = np.zeros((batch, length), np.int32)
    for row in range(batch):
        size = rng.integers(2, length)
        ids[row, : size - 1] = rng.integers(2, vocab_size, size - 1)
        ids[row, size - 1] = 1
    return ids


def fit_one_batch(model, features: dict, steps: int, optimizer, label_smoothing=0.0) -> float:
    """Trains `model` on one fixed batch, so that it decodes that batch better
    than chance: the cross-entropy, plus the CTC loss (per target token) when
    the model has a CTC head.

    Args:
        model: a `Transformer`.
        features: the batch (`targets`, and `inputs` and for speech
            `inputs_length` where the model has inputs).
        steps: training steps.
        optimizer: a Keras optimizer; a checkpoint can save it afterwards.
        label_smoothing: of the cross-entropy.

    Returns:
        The last step's loss.

    Example:

    >>> ids = random_sequences(np.random.default_rng(0), 8, 7, vocab_size=12)
    >>> loss = fit_one_batch(model, {"inputs": ids, "targets": ids}, 40, keras.optimizers.Adam())
    """

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            if model.ctc_projection is None:
                logits = model(features, training=True)
                loss, _ = padded_cross_entropy(logits, features["targets"], label_smoothing)
            else:
                logits, ctc_logits, ctc_mask = model.call_with_ctc(features, training=True)
                loss, tokens = padded_cross_entropy(logits, features["targets"], label_smoothing)
                loss += summed_ctc_loss(ctc_logits, ctc_mask, features["targets"]) / tokens
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    for _ in range(steps):
        loss = train_step()
    return float(loss)


# Run as `python -c BLOCK_TENSORFLOW script.py args...`: the script runs with
# every `import tensorflow` failing, as on a device or a slim server.
BLOCK_TENSORFLOW = (
    "import runpy, sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'tensorflow':\n"
    "            raise ImportError('tensorflow is blocked in this test')\n"
    "sys.meta_path.insert(0, Block())\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def librispeech_transcripts(tree: pathlib.Path) -> dict[str, str]:
    """Utterance id -> transcript, from every `*.trans.txt` under `tree`, read
    directly (what the LibriSpeech reader's output is checked against)."""
    lines = {}
    for path in tree.rglob("*.trans.txt"):
        for line in path.read_text("utf-8").splitlines():
            utterance_id, text = line.split(" ", 1)
            lines[utterance_id] = text
    return lines


def generate_from_tree(problem, root: pathlib.Path, tree: pathlib.Path) -> str:
    """Runs `problem`'s datagen on a LibriSpeech-layout `tree` (linked as
    `root/raw/LibriSpeech`) into `root/data`, and returns that data dir."""
    (root / "raw").mkdir()
    (root / "raw" / "LibriSpeech").symlink_to(tree / "LibriSpeech")
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return str(root / "data")


def spelled_score(scorer, tokens: list[int]) -> tuple[float, list[float]]:
    """The scorer's summed score of one hypothesis spelled token by token."""
    state, steps = scorer.initial_state(1), []
    for step, token in enumerate(tokens):
        scores, new_state = scorer.score(state, None, step)
        steps.append(float(scores[0, 0, token]))
        chosen = tf.constant([[token]], tf.int32)
        state = scorer.select(state, new_state, tf.zeros([1, 1], tf.int32), chosen, chosen)
    return sum(steps), steps
