"""t2t-lite-decoder: decodes a dataset split or a file with a trained model.

    t2t-lite-decoder --problem=librispeech --data_dir=$DATA --output_dir=$OUT \
        --decode_hparams="beam_size=4,alpha=0.6"
    t2t-lite-decoder ... --decode_from_file=wavs.txt --decode_to_file=out.txt

Without --decode_from_file it decodes the --dataset_split (test, else dev),
writes hypotheses to --decode_to_file and references next to them
(`.targets`), and prints WER/CER (speech) or BLEU (text) and sequence
accuracy, computed by jiwer and sacrebleu over exactly the lines written.
"""

from __future__ import annotations

import json
import os

from absl import flags

from t2t_lite.cli import common
from t2t_lite.data import pipeline, shards
from t2t_lite.data.audio_io import AudioError
from t2t_lite.data.problem import EVAL, TEST
from t2t_lite.decoding import scoring
from t2t_lite.decoding.decode import BatchDecoder, decode_dataset, decode_hparams
from t2t_lite.decoding.inputs import features_from_lines
from t2t_lite.decoding.trained_model import CheckpointNotFoundError, load_trained_model
from t2t_lite.training.run_dir import write_atomically

flags.DEFINE_string("decode_hparams", "", 'Decode settings: "beam_size=4,alpha=0.6,...".')
flags.DEFINE_string("decode_from_file", None, "Text lines, or audio paths, one per line.")
flags.DEFINE_string("decode_to_file", None, "Where hypotheses are written, one per line.")
flags.DEFINE_string("checkpoint_path", None, "A checkpoint prefix or directory to decode with.")
flags.DEFINE_string("dataset_split", None, "test or dev (default: test if it exists, else dev).")

FLAGS = flags.FLAGS


def _lines_out(decoded: list[dict], return_beams: bool) -> list[str]:
    if return_beams:
        return ["\t".join(d["beams"]) for d in decoded]
    return [d["hypothesis"] for d in decoded]


def _decode_file(problem, hparams, decoder, decode_hp) -> str:
    with open(FLAGS.decode_from_file, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    if not lines:
        raise common.CliError(f"--decode_from_file {FLAGS.decode_from_file} has no lines.")
    encoder = problem.feature_encoders(FLAGS.data_dir)["targets"]
    decoded = []
    batches = features_from_lines(problem, hparams, FLAGS.data_dir, lines, decode_hp.batch_size)
    for features in batches:
        ids, _ = decoder(features)
        for row in ids:
            beams = [encoder.decode(beam) for beam in row]
            decoded.append({"hypothesis": beams[0], "beams": beams})
    target = FLAGS.decode_to_file or FLAGS.decode_from_file + ".decodes"
    write_atomically(target, "\n".join(_lines_out(decoded, decode_hp.return_beams)) + "\n")
    return f"decoded {len(decoded)} lines of {FLAGS.decode_from_file} into {target}"


def _decode_split(problem, hparams, decoder, decode_hp) -> str:
    split = FLAGS.dataset_split
    if split is None:
        split = TEST if shards.existing_shards(FLAGS.data_dir, problem.name, TEST) else EVAL
    # Every example, in fixed-size batches: no length filter drops any.
    batching = hparams.copy().override_from_dict(
        {
            "use_fixed_batch_size": True,
            "batch_size": decode_hp.batch_size,
            "max_input_seq_length": 0,
            "max_target_seq_length": 0,
            "eval_drop_long_sequences": False,
        }
    )
    dataset = pipeline.make_dataset(problem, split, FLAGS.data_dir, batching)
    encoder = problem.feature_encoders(FLAGS.data_dir)["targets"]
    decoded = decode_dataset(decoder, dataset, encoder)
    target = FLAGS.decode_to_file or os.path.join(FLAGS.output_dir, f"decode_{split}.txt")
    hypotheses = [d["hypothesis"] for d in decoded]
    references = [d["reference"] for d in decoded]
    write_atomically(target, "\n".join(_lines_out(decoded, decode_hp.return_beams)) + "\n")
    write_atomically(target + ".targets", "\n".join(references) + "\n")
    metrics = [m for m in problem.eval_metrics if m in scoring.DECODE_METRICS]
    scores = scoring.score(metrics + ["sequence_accuracy"], hypotheses, references)
    scores["examples"] = len(decoded)
    write_atomically(target + ".metrics.json", json.dumps(scores, indent=2, sort_keys=True))
    summary = ", ".join(
        f"{name.upper() if name in ('wer', 'cer', 'bleu') else name} {value:.4f}"
        if isinstance(value, float)
        else f"{name} {value}"
        for name, value in scores.items()
    )
    return f"{problem.name} {split}: {summary} (hypotheses in {target})"


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    common.require_flag("output_dir")
    common.require_flag("data_dir")
    problem = common.problem_from_flags()
    decode_hp = decode_hparams(FLAGS.decode_hparams)
    try:
        model, hparams, checkpoint = load_trained_model(
            FLAGS.output_dir, problem, FLAGS.data_dir, FLAGS.model, FLAGS.checkpoint_path
        )
    except (FileNotFoundError, CheckpointNotFoundError) as error:
        raise common.CliError(str(error)) from error
    decoder = BatchDecoder(model, hparams, decode_hp)
    try:
        if FLAGS.decode_from_file:
            message = _decode_file(problem, hparams, decoder, decode_hp)
        else:
            message = _decode_split(problem, hparams, decoder, decode_hp)
    except (AudioError, OSError) as error:
        raise common.CliError(str(error)) from error
    print(f"{message} [checkpoint {os.path.basename(checkpoint)}]")
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
