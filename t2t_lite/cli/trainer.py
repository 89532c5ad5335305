"""t2t-lite-trainer: trains a registered model on a registered problem.

    t2t-lite-trainer --problem=librispeech --model=transformer \
        --hparams_set=transformer_librispeech --data_dir=$DATA --output_dir=$OUT
"""

from __future__ import annotations

import os
import sys
import time

import tensorflow as tf
from absl import flags, logging

from t2t_lite import registry, run_dir
from t2t_lite.cli import common, training_diagnostics
from t2t_lite.data import normalization_prior
from t2t_lite.data.problem import EVAL, TRAIN
from t2t_lite.data.word_boundary_targets import has_word_times, no_word_times_message
from t2t_lite.data.word_boundary_weight import WEIGHT_HPARAM, word_boundaries_wanted
from t2t_lite.decoding.evaluation.evaluator import DecodeEvaluator
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.hparam import HParams
from t2t_lite.training import strategy as strategies
from t2t_lite.training.build_trainer import ADDED_HPARAM_DEFAULTS, build_trainer
from t2t_lite.training.trainer import Trainer, TrainerConfig, TrainingError, WarmStartError

SCHEDULES = ("train", "evaluate", "train_and_evaluate", "continuous_eval")

flags.DEFINE_integer("train_steps", 250000, "Total number of training steps.")
flags.DEFINE_integer("eval_steps", 100, "Dev batches for teacher-forced evaluation.")
flags.DEFINE_integer("local_eval_frequency", 1000, "Evaluate every this many steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Save a checkpoint every this many steps.")
flags.DEFINE_integer("keep_checkpoint_max", 20, "How many checkpoints to keep (0: all, as T2T).")
flags.DEFINE_integer("iterations_per_loop", 100, "Training steps per tf.function call.")
flags.DEFINE_integer("log_step_count_steps", 100, "Log a progress line every this many steps.")
flags.DEFINE_integer("eval_decode_examples", 64, "Dev examples decoded at each evaluation.")
flags.DEFINE_enum("schedule", "train_and_evaluate", SCHEDULES, "What to run.")
flags.DEFINE_bool("generate_data", False, "Run datagen first when the shards are missing.")
flags.DEFINE_integer("random_seed", None, "Seed for weights, data order and augmentation.")
flags.DEFINE_bool(
    "deterministic",
    False,
    "With --random_seed: TF's op determinism (and so an ordered tf.data pipeline), "
    "so that two runs on the same machine give the same weights; slower.",
)
flags.DEFINE_float(
    "eval_timeout_mins",
    240,
    "continuous_eval: stop after waiting this long for a new checkpoint (T2T's flag).",
)
flags.DEFINE_string(
    "warm_start_from",
    None,
    "A checkpoint (prefix or run directory) whose model weights start this run; its "
    "optimizer state and step are not taken (T2T's flag).",
)
flags.DEFINE_bool("xla_compile", False, "Compile the training step with XLA.")
flags.DEFINE_bool(
    "static_shapes", None, "Pad batches to bucket boundaries (default: on for TPU and XLA)."
)
flags.DEFINE_integer(
    "intra_op_parallelism_threads",
    0,
    "Threads one TF op may split its work across (0: TF's choice, every core); "
    "1 suits a small model on a few cores (T2T's flag).",
)
flags.DEFINE_integer(
    "inter_op_parallelism_threads",
    0,
    "Threads running independent TF ops at once (0: TF's choice, every core; T2T's flag).",
)
flags.DEFINE_enum("strategy", "auto", list(strategies.STRATEGIES), "tf.distribute strategy.")
flags.DEFINE_string("tpu", None, "Cloud TPU name or grpc:// address.")
flags.DEFINE_string("tpu_zone", None, "GCE zone of the Cloud TPU.")
flags.DEFINE_string("gcp_project", None, "GCP project of the Cloud TPU.")
if "decode_hparams" not in flags.FLAGS:  # the decoder's flag, when both are imported
    flags.DEFINE_string("decode_hparams", "", 'Decode hparams, e.g. "ctc_weight=0.3".')

FLAGS = flags.FLAGS


def _eval_decoder_factory(problem, hparams: HParams):
    """What the trainer decodes at each evaluation (None: no decoding metrics)."""
    if not problem.has_inputs or FLAGS.eval_decode_examples <= 0:
        return None
    return DecodeEvaluator.factory(
        run_config=RunConfig.from_hparams(hparams),
        problem=problem,
        data_dir=FLAGS.data_dir,
        decode_overrides=FLAGS.decode_hparams,
        max_examples=FLAGS.eval_decode_examples,
    )


def _config(strategy) -> TrainerConfig:
    static = FLAGS.static_shapes
    if static is None:
        static = FLAGS.xla_compile or strategies.is_tpu(strategy)
    return TrainerConfig(
        output_dir=FLAGS.output_dir,
        data_dir=FLAGS.data_dir,
        train_steps=FLAGS.train_steps,
        eval_steps=FLAGS.eval_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max or None,  # 0: keep all (T2T)
        iterations_per_loop=FLAGS.iterations_per_loop,
        log_step_count_steps=FLAGS.log_step_count_steps,
        xla_compile=FLAGS.xla_compile,
        static_shapes=static,
        random_seed=FLAGS.random_seed,
        warm_start_from=FLAGS.warm_start_from,
    )


def _ensure_data(problem) -> None:
    missing = [  # only what the run reads: not e.g. spoken_synth's long split
        split for split in _splits_read() if not problem.has_split(FLAGS.data_dir, split)
    ]
    if missing and FLAGS.generate_data and FLAGS.schedule in ("train", "train_and_evaluate"):
        tmp_dir = FLAGS.tmp_dir or os.path.join(FLAGS.data_dir, "tmp")
        print(problem.generate_data(FLAGS.data_dir, tmp_dir).summary())
    elif missing:
        problem.require_data(FLAGS.data_dir, missing[0])  # raises the clear error
    for split in _splits_read():
        problem.require_data(FLAGS.data_dir, split)  # checks the shards' manifest


def _splits_read() -> tuple[str, ...]:
    """The splits --schedule reads (their shards are checked before the first step)."""
    if FLAGS.schedule == "train":
        return (TRAIN,)
    if FLAGS.schedule == "train_and_evaluate":
        return (TRAIN, EVAL)
    return (EVAL,)


# What the evaluate and continuous_eval schedules do not read (said in one warning).
_TRAINING_ONLY_FLAGS = (
    "local_eval_frequency",
    "save_checkpoints_steps",
    "keep_checkpoint_max",
    "iterations_per_loop",
    "generate_data",
    "tmp_dir",
    "deterministic",
    "warm_start_from",
)


def _continuous_eval(trainer: Trainer) -> None:
    """Evaluates each new checkpoint until one reaches --train_steps, or none comes in time.

    It also stops once none has come for --eval_timeout_mins (T2T's ending).
    """
    timeout = FLAGS.eval_timeout_mins * 60
    for checkpoint in tf.train.checkpoints_iterator(FLAGS.output_dir, timeout=timeout):
        trainer.checkpoint.restore(checkpoint).expect_partial()
        trainer.evaluate()
        if trainer.step >= FLAGS.train_steps:
            return
    print(
        f"continuous_eval: no new checkpoint in {FLAGS.output_dir} for "
        f"{FLAGS.eval_timeout_mins:g} min (--eval_timeout_mins); stopping.",
        file=sys.stderr,
    )


def _trained_run():
    """(problem, hparams, model_name) of the run that evaluate/continuous_eval read.

    As in the decoder and exporter, the run's hparams.json and flags.json
    are the source of truth (`common.run_settings`). continuous_eval may
    start before the trainer has written them; it then builds the hparams
    from the flags, as the trainer will.
    """
    output_dir = common.require_flag("output_dir")
    if FLAGS.schedule == "evaluate" and not tf.train.latest_checkpoint(output_dir):
        raise common.CliError(
            f"--output_dir {output_dir} holds no checkpoint to evaluate; pass the output "
            "directory of a t2t-lite-trainer run (or train first)."
        )
    ignored = _TRAINING_ONLY_FLAGS + (("train_steps",) if FLAGS.schedule == "evaluate" else ())
    if FLAGS.schedule == "evaluate":
        ignored += ("eval_timeout_mins",)
    if FLAGS.schedule == "evaluate" or tf.io.gfile.exists(
        os.path.join(output_dir, run_dir.HPARAMS_FILE)
    ):
        settings = common.run_settings(output_dir, ignored=ignored)
        FLAGS.data_dir = settings.data_dir  # read by the pipeline and eval decoding
        return settings.problem, settings.hparams, settings.model_name
    common.warn_ignored_flags(ignored)
    problem = common.problem_from_flags() if FLAGS.problem else None
    hparams = common.hparams_from_flags(problem)
    problem = problem or common.problem_from_flags()
    common.require_flag("data_dir")
    registry.model(FLAGS.model)
    return problem, hparams, FLAGS.model


def _threads() -> None:
    """TF's CPU thread pools as the flags ask, before anything starts TF's runtime."""
    for name, setter in (
        ("intra_op_parallelism_threads", tf.config.threading.set_intra_op_parallelism_threads),
        ("inter_op_parallelism_threads", tf.config.threading.set_inter_op_parallelism_threads),
    ):
        threads = FLAGS[name].value
        if threads < 0:
            raise common.CliError(f"--{name} must be 0 (TF's choice) or more, got {threads}.")
        if not threads:
            continue
        try:
            setter(threads)
        except RuntimeError as error:  # only in a process that already ran TF
            raise common.CliError(
                f"--{name} must be set before TensorFlow starts; run t2t-lite-trainer "
                "in its own process to use it."
            ) from error


def _seed() -> None:
    if FLAGS.random_seed is None:
        if FLAGS.deterministic:
            raise common.CliError("--deterministic needs --random_seed.")
        return
    tf.keras.utils.set_random_seed(FLAGS.random_seed)
    if FLAGS.deterministic:
        # Also makes every tf.data stage keep its order (TF's documented rule).
        tf.config.experimental.enable_op_determinism()


def _word_boundary_head(problem, hparams: HParams) -> None:
    """A set's word boundary head is left out on a corpus without word times.

    A line says so; the corpus's shards hold no word times. A head asked for
    with --hparams there is an error.
    """
    if not word_boundaries_wanted(hparams) or has_word_times(problem, FLAGS.data_dir):
        return
    if WEIGHT_HPARAM in common.overridden_hparams():
        raise common.CliError(no_word_times_message(problem, FLAGS.data_dir))
    hparams.set_hparam(WEIGHT_HPARAM, 0.0)
    print(
        f"{problem.name} has no word times: training without the word boundary head "
        f"(hparam {WEIGHT_HPARAM}=0)"
    )


def _add_normalization_prior(problem, hparams: HParams) -> None:
    """The training set's feature statistics, added to the hparams when they want them.

    Streaming models want them (`audio_normalization_prior_frames`).
    """
    try:
        statistics = normalization_prior.add_training_prior(
            hparams, problem, FLAGS.data_dir, FLAGS.output_dir
        )
    except ValueError as error:
        raise common.CliError(str(error)) from error
    if statistics is not None:
        print(
            f"normalization prior: feature statistics of {statistics.utterances} training "
            f"utterances ({statistics.frames:,} sounding frames), kept in hparams.json"
        )


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    _threads()
    if FLAGS.keep_checkpoint_max < 0:
        raise common.CliError("--keep_checkpoint_max must be 0 (keep all) or more.")
    training = FLAGS.schedule in ("train", "train_and_evaluate")
    if training:
        # Names and hparams first: a typo is reported before anything else.
        problem = common.problem_from_flags() if FLAGS.problem else None
        hparams = common.hparams_from_flags(problem)
        problem = problem or common.problem_from_flags()
        common.require_flag("data_dir")
        common.require_flag("output_dir")
        model_name = common.FLAGS.model
        registry.model(model_name)
    else:
        problem, hparams, model_name = _trained_run()
    _seed()
    _ensure_data(problem)
    strategy = strategies.make_strategy(
        FLAGS.strategy, FLAGS.tpu, FLAGS.tpu_zone, FLAGS.gcp_project
    )
    if training:
        _add_normalization_prior(problem, hparams)
        _word_boundary_head(problem, hparams)
    common.warn_unread_hparams(hparams, problem, model_name)
    try:
        trainer = build_trainer(
            problem,
            hparams,
            model_name,
            _config(strategy),
            strategy,
            make_eval_decoder=_eval_decoder_factory(problem, hparams),
        )
    except ValueError as error:  # hparams or decode hparams the model cannot honour
        raise common.CliError(str(error)) from error
    # Saved only once the model is built: hparams it refused leave no run
    # behind that a corrected command would then be refused to resume.
    if training and strategies.is_chief(strategy):
        run_dir.save_or_check_hparams(
            FLAGS.output_dir, hparams, problem, defaults=ADDED_HPARAM_DEFAULTS
        )
        run_dir.save_flags(FLAGS.output_dir, common.flag_values())
    if training:
        training_diagnostics.log_diagnostics(trainer)
    start = time.time()
    try:
        if FLAGS.schedule == "train":
            trainer.train()
        elif FLAGS.schedule == "train_and_evaluate":
            trainer.train(evaluate_every=FLAGS.local_eval_frequency)
        elif FLAGS.schedule == "evaluate":
            trainer.restore()
            trainer.evaluate()
        else:
            _continuous_eval(trainer)
    except (TrainingError, WarmStartError) as error:
        raise common.CliError(str(error)) from error
    except tf.errors.DataLossError as error:  # a shard damaged in place (same size)
        raise common.damaged_data_error(problem, FLAGS.data_dir, _splits_read(), error) from error
    logging.info(
        "done at step %d in %.0f s; final weights checksum: %.10e",
        trainer.step,
        time.time() - start,
        trainer.weights_checksum(),
    )
    print(f"final weights checksum: {trainer.weights_checksum():.10e}")
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
