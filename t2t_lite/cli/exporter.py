"""t2t-lite-exporter: writes a SavedModel that TF Serving runs.

    t2t-lite-exporter --output_dir=$OUT --export_dir=$EXPORT \
        [--decode_hparams="beam_size=4,alpha=0.6"] [--export_version=N]

The run's hparams come from `$OUT/hparams.json`; --problem, --data_dir,
--model and --t2t_usr_dir default to the trainer's values in
`$OUT/flags.json`. The latest checkpoint of `$OUT` is exported unless
--checkpoint_path names a checkpoint prefix or directory. The SavedModel is
written to `$EXPORT/<version>/` (a timestamp unless --export_version), the
layout TF Serving expects; its `serving_default` signature is described in
`t2t_lite/serving/serving_module.py`.
"""

from __future__ import annotations

import json
import os
import sys

import tensorflow as tf
from absl import flags

from t2t_lite import registry, run_dir, usr_dir
from t2t_lite.cli import common
from t2t_lite.decoding.decode import decode_hparams
from t2t_lite.serving import export

FLAGS = flags.FLAGS


def _define_string(name: str, default: str | None, help_text: str) -> None:
    # The decoder defines the flags the two commands share; a process that
    # imports both CLI modules (a test, a notebook) must not fail on them.
    if name not in FLAGS:
        flags.DEFINE_string(name, default, help_text)


flags.DEFINE_string("export_dir", None, "Where to write <version>/ (TF Serving's model base path).")
flags.DEFINE_integer("export_version", None, "Version number (default: a timestamp).")
_define_string("decode_hparams", "", 'Decode hparams, e.g. "beam_size=4,alpha=0.6".')
_define_string(
    "checkpoint_path", None, "Checkpoint prefix or directory (default: latest in output_dir)."
)


def _saved_flags(output_dir: str) -> dict:
    """The trainer's flags.json, or {} when the run has none."""
    path = os.path.join(output_dir, run_dir.FLAGS_FILE)
    if not tf.io.gfile.exists(path):
        return {}
    try:
        with tf.io.gfile.GFile(path) as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise common.CliError(f"{path} is not valid JSON ({error}); pass --problem.") from error


def _setting(name: str, saved: dict):
    """A flag given on the command line wins over the trainer's saved value."""
    if FLAGS[name].present or saved.get(name) is None:
        return getattr(FLAGS, name)
    return saved[name]


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    output_dir = common.require_flag("output_dir")
    export_dir = common.require_flag("export_dir")
    if not tf.io.gfile.isdir(output_dir):
        raise common.CliError(
            f"--output_dir {output_dir} does not exist; pass a t2t-lite-trainer output directory."
        )
    try:
        hparams = run_dir.load_hparams(output_dir)
    except FileNotFoundError as error:
        raise common.CliError(str(error)) from error
    saved = _saved_flags(output_dir)
    if not FLAGS.t2t_usr_dir and saved.get("t2t_usr_dir"):
        usr_dir.import_usr_dir(saved["t2t_usr_dir"])  # the run's problems and models
    problem_name = _setting("problem", saved)
    if not problem_name:
        raise common.CliError(
            f"--problem is required ({output_dir} has no {run_dir.FLAGS_FILE} naming it)."
        )
    if FLAGS.hparams_set or FLAGS.hparams:
        print(
            f"{common.program_name()}: warning: --hparams_set/--hparams are ignored; the "
            f"hparams are those of {output_dir}/{run_dir.HPARAMS_FILE}.",
            file=sys.stderr,
        )
    model_name = _setting("model", saved)
    registry.model(model_name)  # an unknown name fails here, in one line
    try:
        path = export.export_run(
            output_dir=output_dir,
            export_dir=export_dir,
            problem=registry.problem(problem_name),
            decode_hp=decode_hparams(FLAGS.decode_hparams),
            hparams=hparams,
            model_name=model_name,
            data_dir=_setting("data_dir", saved),
            checkpoint_path=FLAGS.checkpoint_path,
            version=FLAGS.export_version,
        )
    except (export.ExportError, FileNotFoundError) as error:
        raise common.CliError(str(error)) from error
    print(path)
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
