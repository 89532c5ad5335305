"""t2t-lite-decoder: decodes a dataset split or a file with a trained model.

    t2t-lite-decoder --problem=librispeech --data_dir=$DATA --output_dir=$OUT \
        --decode_hparams="beam_size=4,alpha=0.6"
    t2t-lite-decoder ... --decode_from_file=wavs.txt --decode_to_file=out.txt

Speech is decoded from waveforms exactly as the exported SavedModel decodes
it (`serving_module.WaveformTranscriber`): a recording longer than the
decode hparam `segment_seconds` is split at pauses and transcribed whole,
and silence gives "". Without --decode_from_file it decodes the
--dataset_split (test, else dev; for speech any split datagen wrote, e.g.
spoken_synth's `long`),
writes hypotheses to --decode_to_file and references next to them
(`.targets`), and prints WER/CER (speech) or BLEU (text) and sequence
accuracy, computed by jiwer and sacrebleu over exactly the lines written.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf
from absl import flags

from t2t_lite.cli import common
from t2t_lite.data import pipeline, shards
from t2t_lite.data.audio_io import AudioError, read_audio
from t2t_lite.data.problem import EVAL, TEST
from t2t_lite.decoding import scoring
from t2t_lite.decoding.decode import BatchDecoder, decode_dataset, decode_hparams
from t2t_lite.decoding.inputs import (
    InputListError,
    read_input_lines,
    record_waveform_batches,
    text_batches,
    waveform_batches,
)
from t2t_lite.decoding.trained_model import CheckpointNotFoundError, load_trained_model
from t2t_lite.run_dir import write_atomically
from t2t_lite.serving.serving_module import WaveformTranscriber

if "decode_hparams" not in flags.FLAGS:  # the trainer defines it too
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


def _lines_to_decode() -> list[str] | None:
    """The --decode_from_file lines, read before the model loads: a bad list fails fast."""
    if not FLAGS.decode_from_file:
        return None
    try:
        lines = read_input_lines(FLAGS.decode_from_file)
    except (InputListError, OSError) as error:
        raise common.CliError(str(error)) from error
    if not lines:
        raise common.CliError(f"--decode_from_file {FLAGS.decode_from_file} has no lines.")
    return lines


def _transcribed(beams_and_scores, references=None) -> list[dict]:
    return [
        {"hypothesis": beams[0], "beams": beams, "score": score, "reference": reference}
        for (beams, score), reference in zip(
            beams_and_scores, references or [None] * len(beams_and_scores), strict=True
        )
    ]


def _decode_file(problem, decoder, decode_hp, lines: list[str]) -> str:
    encoder = problem.feature_encoders(FLAGS.data_dir)["targets"]
    decoded = []
    if isinstance(decoder, WaveformTranscriber):
        waveforms = [read_audio(path) for path in lines]  # fails early, naming the file
        for batch, lengths in waveform_batches(waveforms, decode_hp.batch_size):
            decoded += _transcribed(decoder(batch, lengths))
    else:
        for features in text_batches(problem, FLAGS.data_dir, lines, decode_hp.batch_size):
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
    encoder = problem.feature_encoders(FLAGS.data_dir)["targets"]
    if isinstance(decoder, WaveformTranscriber):
        # From the records' waveforms, as the SavedModel transcribes them.
        decoded = []
        batches = record_waveform_batches(problem, FLAGS.data_dir, split, decode_hp.batch_size)
        for waveforms, lengths, targets in batches:
            references = [encoder.decode(row) for row in targets]
            decoded += _transcribed(decoder(waveforms, lengths), references)
    else:
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
        decoded = decode_dataset(decoder, dataset, encoder)
    target = FLAGS.decode_to_file or os.path.join(FLAGS.output_dir, f"decode_{split}.txt")
    hypotheses = [d["hypothesis"] for d in decoded]
    references = [d["reference"] for d in decoded]
    write_atomically(target, "\n".join(_lines_out(decoded, decode_hp.return_beams)) + "\n")
    write_atomically(target + ".targets", "\n".join(references) + "\n")
    scores = scoring.score(scoring.decode_metrics(problem), hypotheses, references)
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
    lines = _lines_to_decode()
    try:
        model, hparams, checkpoint = load_trained_model(
            FLAGS.output_dir, problem, FLAGS.data_dir, FLAGS.model, FLAGS.checkpoint_path
        )
    except (FileNotFoundError, CheckpointNotFoundError) as error:
        raise common.CliError(str(error)) from error
    try:
        decoder = BatchDecoder(model, hparams, decode_hp)
    except ValueError as error:  # decode hparams the model cannot honour
        raise common.CliError(str(error)) from error
    if problem.input_modality == "speech":
        encoder = problem.feature_encoders(FLAGS.data_dir)["targets"]
        decoder = WaveformTranscriber(model, hparams, decode_hp, decoder.cap, encoder)
    try:
        if lines:
            message = _decode_file(problem, decoder, decode_hp, lines)
        else:
            message = _decode_split(problem, hparams, decoder, decode_hp)
    except (AudioError, OSError) as error:
        raise common.CliError(str(error)) from error
    except tf.errors.DataLossError as error:  # a dev/test shard damaged in place
        raise common.damaged_data_error(problem, FLAGS.data_dir, (TEST, EVAL), error) from error
    print(f"{message} [checkpoint {os.path.basename(checkpoint)}]")
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
