"""The output directory of a run: hparams.json, flags, checkpoints, eval results.

Only the chief writes into `output_dir`. Other workers of a multi-worker
run must still save (saving reads mirrored variables collectively), so they
write to a private temporary directory that is removed right after.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from t2t_lite.hparam import HParams

HPARAMS_FILE = "hparams.json"
FLAGS_FILE = "flags.json"
EVAL_RESULTS_FILE = "eval_results.jsonl"


class ResumeError(ValueError):
    """A rerun in an existing output_dir asks for different hparams."""


def write_atomically(path: str, text: str) -> None:
    """Writes `text` to a temporary name, then renames it over `path`."""
    temporary = path + ".tmp"
    with tf.io.gfile.GFile(temporary, "w") as handle:
        handle.write(text)
    tf.io.gfile.rename(temporary, path, overwrite=True)


def load_hparams(output_dir: str) -> HParams:
    """The hparams a run saved (decoder, exporter and resumes read them)."""
    path = os.path.join(output_dir, HPARAMS_FILE)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(
            f"{path} does not exist: --output_dir must be a t2t-lite-trainer output directory."
        )
    with tf.io.gfile.GFile(path) as handle:
        return HParams.from_json(handle.read())


def save_or_check_hparams(
    output_dir: str, hparams: HParams, problem=None, defaults: dict | None = None
) -> None:
    """Saves hparams.json, or refuses a resume whose hparams differ from it.

    Args:
        output_dir: the run's directory.
        hparams: the hparams this run trains with.
        problem: when given, a problem hparam the saved run lacks (it was
            saved before the hparam existed) counts as the problem's
            default, the value that run trained with, as the decoder reads
            such a run (`Problem.add_hparams`).
        defaults: the same for other hparams, name -> the value a run saved
            without it trained with (the model's:
            `build_trainer.ADDED_HPARAM_DEFAULTS`).
    """
    path = os.path.join(output_dir, HPARAMS_FILE)
    if tf.io.gfile.exists(path):
        saved = load_hparams(output_dir)
        if problem is not None:
            problem.add_hparams(saved)
        for name, value in (defaults or {}).items():
            if name not in saved:
                saved.add_hparam(name, value)
        differing = saved.differences(hparams)
        if differing:
            details = ", ".join(
                f"{name} (saved {saved.get(name)!r}, now {hparams.get(name)!r})"
                for name in differing
            )
            raise ResumeError(
                f"{output_dir} holds a run with different hparams: {details}; "
                "use a new --output_dir or the same hparams."
            )
        return
    tf.io.gfile.makedirs(output_dir)
    write_atomically(path, hparams.to_json() + "\n")


def save_flags(output_dir: str, flag_values: dict) -> None:
    write_atomically(
        os.path.join(output_dir, FLAGS_FILE), json.dumps(flag_values, indent=2, sort_keys=True)
    )


def read_json(path: str):
    """The JSON value in the file at `path`, or None when there is no file.

    `path` may be on any file system TF reads.

    Raises:
        ValueError: the file is not valid JSON.
    """
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error}).") from error


def load_flags(output_dir: str) -> dict:
    """The trainer's flags.json in `output_dir`, or {} when the run has none.

    Raises:
        ValueError: the file is not valid JSON.
    """
    saved = read_json(os.path.join(output_dir, FLAGS_FILE))
    return saved if isinstance(saved, dict) else {}


def append_eval_results(output_dir: str, results: dict) -> None:
    """Appends one JSON line of eval results (read by people and tests)."""
    path = os.path.join(output_dir, EVAL_RESULTS_FILE)
    previous = ""
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as handle:
            previous = handle.read()
    write_atomically(path, previous + json.dumps(results, sort_keys=True) + "\n")


def read_eval_results(output_dir: str) -> list[dict]:
    path = os.path.join(output_dir, EVAL_RESULTS_FILE)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def checkpoint_dir(output_dir: str, chief: bool, task_id: int = 0) -> str:
    """Where this task saves checkpoints: output_dir, or a temp dir for non-chiefs."""
    if chief:
        return output_dir
    return os.path.join(output_dir, f".workertemp_{task_id}")
