"""t2t-lite-exporter: writes a SavedModel that TF Serving runs.

    t2t-lite-exporter --output_dir=$OUT --export_dir=$EXPORT \
        [--decode_hparams="beam_size=4,alpha=0.6"] [--export_version=N]

The run's problem, model, hparams and data_dir come from `$OUT/flags.json`
and `$OUT/hparams.json`, as in the decoder (`common.run_settings`: --problem,
--model, --hparams_set and --hparams may be given but must match them;
--data_dir and --t2t_usr_dir may point elsewhere). The latest checkpoint of
`$OUT` is exported unless --checkpoint_path names a checkpoint prefix or
directory. The SavedModel is written to `$EXPORT/<version>/` (a timestamp
unless --export_version), the layout TF Serving expects; its
`serving_default` signature is described in `t2t_lite/serving/serving_module.py`.

With --format=tflite the run is written to `$EXPORT/` as a `.tflite` of
builtin ops only for LiteRT (`t2t_lite/serving/tflite_export.py`): a speech
model is run by `t2t-lite-tflite-transcribe $EXPORT audio.wav` without
TensorFlow, a text model by `t2t_lite.litert.text_model.LiteRtTextModel`. A
streaming model's export also holds its chunk step and final
(`serving/tflite_stream_export.py`; `t2t-lite-tflite-transcribe --stream`).
"""

from __future__ import annotations

from absl import flags

from t2t_lite.cli import common
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.serving import export, tflite_export

FLAGS = flags.FLAGS


def _define_string(name: str, default: str | None, help_text: str) -> None:
    # The decoder defines the flags the two commands share; a process that
    # imports both CLI modules (a test, a notebook) must not fail on them.
    if name not in FLAGS:
        flags.DEFINE_string(name, default, help_text)


flags.DEFINE_string("export_dir", None, "Where to write <version>/ (TF Serving's model base path).")
flags.DEFINE_integer("export_version", None, "Version number (default: a timestamp).")
flags.DEFINE_enum(
    "format",
    "saved_model",
    ["saved_model", "tflite"],
    "saved_model: $EXPORT/<version>/ for TF Serving; tflite: model.tflite (builtin ops only), "
    "vocabulary.json and tflite.json in $EXPORT, for LiteRT.",
)
flags.DEFINE_string("tflite_quantization", "float32", "float32, float16 or int8 (dynamic range).")
flags.DEFINE_float(
    "tflite_max_seconds",
    None,
    "Speech: the longest piece the .tflite decodes at once (longer recordings are split at "
    "pauses); default the model's segment length, the longest piece the SavedModel decodes.",
)
_define_string("decode_hparams", "", 'Decode hparams, e.g. "beam_size=4,alpha=0.6".')
_define_string(
    "checkpoint_path", None, "Checkpoint prefix or directory (default: latest in output_dir)."
)


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    output_dir = common.require_flag("output_dir")
    export_dir = common.require_flag("export_dir")
    # The run's problem, model, hparams and data_dir, as the decoder takes them.
    settings = common.run_settings(output_dir, ignored=("tmp_dir",))
    trained = TrainedRun(
        output_dir=output_dir,
        problem=settings.problem,
        hparams=settings.hparams,
        model_name=settings.model_name,
        data_dir=settings.data_dir,
        checkpoint_path=FLAGS.checkpoint_path,
    )
    decode_config = DecodeConfig.parse(FLAGS.decode_hparams)
    try:
        if FLAGS.format == "tflite":
            path = tflite_export.export_tflite_run(
                trained,
                export_dir,
                decode_config,
                quantization=FLAGS.tflite_quantization,
                max_seconds=FLAGS.tflite_max_seconds,
            )
        else:
            path = export.export_run(trained, export_dir, decode_config, FLAGS.export_version)
    except (export.ExportError, FileNotFoundError) as error:
        raise common.CliError(str(error)) from error
    print(path)
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
