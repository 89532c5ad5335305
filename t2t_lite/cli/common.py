"""What every `t2t-lite-*` command shares: T2T's flags and error reporting.

Each command is a thin `main(argv)` run through `run`, which turns the
library's user-facing errors (unknown names, bad hparams, a broken usr dir,
bad flags) into one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from absl import app, flags, logging

from t2t_lite import registry, run_dir, usr_dir
from t2t_lite.data import shards
from t2t_lite.data.problem import DataError
from t2t_lite.hparam import HParams, HParamsError, create_hparams
from t2t_lite.run_dir import ResumeError

FLAGS = flags.FLAGS

flags.DEFINE_string("problem", None, "Registered problem name, e.g. librispeech.")
flags.DEFINE_string("model", "transformer", "Registered model name.")
flags.DEFINE_string("hparams_set", None, "Registered hparams set, e.g. transformer_base.")
flags.DEFINE_string("hparams", "", 'Overrides of the hparams set: "a=1,b=[2,3],c=foo".')
flags.DEFINE_string("data_dir", None, "Directory of the problem's TFRecords and vocab.")
flags.DEFINE_string("tmp_dir", None, "Directory for raw downloads and extraction.")
flags.DEFINE_string("output_dir", None, "Directory for checkpoints, hparams.json, logs.")
flags.DEFINE_string(
    "t2t_usr_dir", None, "Directory of Python modules registering problems/hparams/models."
)
flags.DEFINE_bool("registry_help", False, "Print every registered name and exit.")


class CliError(ValueError):
    """Bad command-line input; the message is the one line the user sees."""


_USER_ERRORS = (
    CliError,
    DataError,
    shards.ShardError,
    ResumeError,
    registry.RegistryError,
    HParamsError,
    usr_dir.UsrDirError,
)


def program_name() -> str:
    return os.path.basename(sys.argv[0]) or "t2t-lite"


def require_flag(name: str) -> str:
    value = getattr(FLAGS, name)
    if not value:
        raise CliError(f"--{name} is required.")
    return value


def setup(argv: list[str]) -> bool:
    """Rejects stray arguments, imports --t2t_usr_dir, handles --registry_help.

    Returns True when the command should stop (the help was printed).
    """
    if len(argv) > 1:
        raise CliError(f"unexpected arguments {argv[1:]}; every input is a --flag.")
    usr_dir.import_usr_dir(FLAGS.t2t_usr_dir)
    if FLAGS.registry_help:
        print(registry.help_string())
        return True
    return False


def hparams_from_flags(problem=None) -> HParams:
    """The --hparams_set, plus the problem's own hparams, with --hparams applied.

    As in T2T, the problem adds its hparams before the overrides are parsed,
    so --hparams can set them too.
    """
    return create_hparams(require_flag("hparams_set"), FLAGS.hparams, problem)


def overridden_hparams() -> set[str]:
    """Names assigned by --hparams."""
    return set(HParams().parse_names(FLAGS.hparams))


def warn_unread_hparams(hparams: HParams, problem=None, model_name: str = "transformer") -> None:
    """Warns, naming each, about hparams set on purpose that nothing reads."""
    from t2t_lite.training.hparams_usage import unread_settings

    overridden = overridden_hparams()
    for name, why in unread_settings(hparams, problem, overridden, model_name).items():
        logging.warning("hparam %s=%r is not used: %s.", name, hparams.get(name), why)
        print(f"{program_name()}: warning: hparam {name} is not used: {why}.", file=sys.stderr)


def flag_values() -> dict:
    """Every flag of this command with its value (saved next to hparams.json)."""
    return {name: FLAGS[name].value for name in FLAGS if not name.startswith("help")}


def problem_from_flags():
    """The registered --problem, instantiated."""
    return registry.problem(require_flag("problem"))


@dataclasses.dataclass
class RunSettings:
    """What a command that reads a trained run takes from its output_dir."""

    output_dir: str
    problem: Any  # the registered Problem, instantiated
    model_name: str
    hparams: HParams
    data_dir: str | None


def saved_flags(output_dir: str) -> dict:
    """The trainer's flags.json in `output_dir`, or {} when the run has none."""
    try:
        return run_dir.load_flags(output_dir)
    except ValueError as error:
        raise CliError(f"{error} Pass --problem.") from error


def run_settings(output_dir: str, ignored: tuple[str, ...] = ()) -> RunSettings:
    """The problem, model, hparams and data_dir of the trained run in `output_dir`.

    One rule for the decoder, the exporter and the trainer's evaluate and
    continuous_eval schedules: the run's `hparams.json` and `flags.json` are
    the source of truth. --problem, --model and --hparams_set may be left
    out; given, they must match flags.json, and --hparams must match
    hparams.json, else the command stops with one line naming both values
    (a mismatch otherwise surfaces as a checkpoint that does not fit the
    model). --data_dir and --t2t_usr_dir default to the run's and may be
    given (data moves). Flags in `ignored` that were given get one warning.

    Raises:
        CliError: no run in output_dir, or a flag that disagrees with it.
    """
    if not tf.io.gfile.isdir(output_dir):
        raise CliError(
            f"--output_dir {output_dir} does not exist; pass a t2t-lite-trainer output directory."
        )
    try:
        hparams = run_dir.load_hparams(output_dir)
    except FileNotFoundError as error:
        raise CliError(str(error)) from error
    saved = saved_flags(output_dir)
    flags_path = os.path.join(output_dir, run_dir.FLAGS_FILE)
    if not FLAGS.t2t_usr_dir and saved.get("t2t_usr_dir"):
        usr_dir.import_usr_dir(saved["t2t_usr_dir"])  # the run's problems and models
    for name in ("problem", "model", "hparams_set"):
        given, trained = getattr(FLAGS, name), saved.get(name)
        if FLAGS[name].present and trained is not None and given != trained:
            raise CliError(
                f"--{name}={given} does not match the run in {output_dir}, trained with "
                f"--{name}={trained} ({flags_path}); leave --{name} out to use the run's."
            )
    problem_name = saved.get("problem") or FLAGS.problem
    if not problem_name:
        raise CliError(
            f"--problem is required ({output_dir} has no {run_dir.FLAGS_FILE} naming it)."
        )
    problem = registry.problem(problem_name)
    problem.add_hparams(hparams)  # a run saved before the problem had an hparam
    if FLAGS.hparams:
        given = hparams.copy().parse(FLAGS.hparams)
        differing = hparams.differences(given)
        if differing:
            details = ", ".join(
                f"{name}={given.get(name)!r} (the run's {hparams.get(name)!r})"
                for name in differing
            )
            raise CliError(
                f"--hparams sets {details}, which does not match the run in {output_dir} "
                f"({os.path.join(output_dir, run_dir.HPARAMS_FILE)}); leave --hparams out to "
                "use the run's."
            )
    model_name = saved.get("model") if not FLAGS["model"].present else FLAGS.model
    registry.model(model_name or FLAGS.model)  # an unknown name fails here, in one line
    # None is allowed: a problem whose encoders need no files (the
    # algorithmic ones) is exported and decodes text lines without one.
    data_dir = FLAGS.data_dir or saved.get("data_dir")
    warn_ignored_flags(ignored)
    return RunSettings(output_dir, problem, model_name or FLAGS.model, hparams, data_dir)


def warn_ignored_flags(names: tuple[str, ...]) -> None:
    """One warning line naming the given flags among `names` (this command ignores them)."""
    given = [f"--{name}" for name in names if name in FLAGS and FLAGS[name].present]
    if given:
        print(
            f"{program_name()}: warning: {', '.join(given)} "
            f"{'is' if len(given) == 1 else 'are'} ignored by {program_name()}.",
            file=sys.stderr,
        )


def damaged_data_error(problem, data_dir: str, splits, error) -> CliError:
    """The one-line error for a tf.errors.DataLossError met reading `splits`.

    TF's message names no file (a shard damaged in place keeps its size, so
    the manifest check cannot see it), hence the shards are read once more
    to find the damaged one.

    Args:
        problem: the problem whose data was read.
        data_dir: --data_dir.
        splits: the splits the command was reading.
        error: the tf.errors.DataLossError.

    Returns:
        A CliError naming the shard, TF's reason and the datagen command.
    """
    reason = shards.data_loss_reason(error)
    logging.info("reading the data failed (%s); looking for the damaged shard", reason)
    paths = []
    for split in splits:
        try:
            paths += problem.require_data(data_dir, split)
        except (DataError, shards.ShardError):
            continue  # not there: the error came from another split
    fix = shards.regenerate_hint(problem.name, data_dir)
    damaged = shards.find_damaged_shard(paths)
    if damaged:
        path, reason = damaged
        return CliError(f"{path} is damaged ({reason}); {fix}")
    return CliError(f"reading the {problem.name} data in {data_dir} failed ({reason}); {fix}")


def run(main: Callable[[list[str]], int | None]) -> None:
    """Runs `main` under absl, turning user errors into one line and exit 1."""

    def guarded_main(argv: list[str]) -> int | None:
        try:
            return main(argv)
        except _USER_ERRORS as error:
            print(f"{program_name()}: error: {error}", file=sys.stderr)
            return 1

    app.run(guarded_main)
