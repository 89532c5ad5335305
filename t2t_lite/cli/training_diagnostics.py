"""What t2t-lite-trainer logs before the first training step.

It logs the precision, a bfloat16 warning where this CPU would emulate it,
the CPU allocator and thread pools, the static batch shapes, and what the
length limits keep of each split (also written to `length_report.json` in
output_dir, beside the eval results).
"""

from __future__ import annotations

import json
import os

import tensorflow as tf
from absl import logging

from t2t_lite import ALLOCATOR_ENV, platform, run_dir
from t2t_lite.data import length_policy, pipeline
from t2t_lite.training.trainer import Trainer


def log_diagnostics(trainer: Trainer) -> None:
    """Logs the run's settings that decide its speed and what data it reads.

    Args:
        trainer: the built trainer; only its chief writes the length report.
    """
    hparams, config = trainer.hparams, trainer.config
    if config.static_shapes:
        logging.info("%s", pipeline.static_shapes_summary(trainer.problem, hparams))
    logging.info(
        "precision: activations %s, variables %s (hparam activation_dtype=%s)",
        trainer.model.compute_dtype,
        trainer.model.variable_dtype,
        hparams.activation_dtype,
    )
    warning = platform.bfloat16_warning(
        hparams.activation_dtype,
        platform.runs_on_cpu(trainer.strategy),
        platform.cpu_flags(),
    )
    if warning:
        logging.warning("%s", warning)
    logging.info("CPU allocator: %s=%s", ALLOCATOR_ENV, os.environ.get(ALLOCATOR_ENV))
    logging.info(
        "CPU threads: intra-op %d, inter-op %d (0: TF's choice; --intra_op_parallelism_threads)",
        tf.config.threading.get_intra_op_parallelism_threads(),
        tf.config.threading.get_inter_op_parallelism_threads(),
    )
    if trainer.chief:
        report_lengths(trainer)


def report_lengths(trainer: Trainer) -> dict:
    """Logs what the length limits keep of each split, and writes it to output_dir.

    The file is `length_report.json`.

    Returns:
        The report (`length_policy.run_lengths_report`).
    """
    config = trainer.config
    report = length_policy.run_lengths_report(
        trainer.problem, trainer.hparams, config.data_dir, config.static_shapes
    )
    logging.info("%s", length_policy.describe(report))
    run_dir.write_atomically(
        os.path.join(config.output_dir, length_policy.REPORT_FILE),
        json.dumps(report, indent=2) + "\n",
    )
    return report
