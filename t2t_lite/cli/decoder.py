"""t2t-lite-decoder: decodes a dataset split or a file with a trained model.

    t2t-lite-decoder --output_dir=$OUT --decode_hparams="beam_size=4,alpha=0.6"
    t2t-lite-decoder ... --decode_from_file=wavs.txt --decode_to_file=out.txt

The run's problem, model, hparams and data_dir come from `$OUT/flags.json`
and `$OUT/hparams.json` (`common.run_settings`: --problem, --model,
--hparams_set and --hparams may be given but must match them; --data_dir and
--t2t_usr_dir may point elsewhere).

Speech is decoded from waveforms exactly as the exported SavedModel decodes
it (`transcriber.WaveformTranscriber`): a recording longer than the
decode hparam `segment_seconds` is split at pauses and transcribed whole,
and silence gives "". Text inputs are checked as the SavedModel checks them
(symbols in the vocabulary, at most `input_limits.max_input_tokens`
tokens) before the model loads. Output line i answers input line i: a blank
input line gives a blank output line.

Without --decode_from_file it decodes the --dataset_split (test, else dev;
for speech any split datagen wrote, e.g. spoken_synth's `long`) in record
order, writes hypotheses to --decode_to_file, references next to them
(`.targets`) and the inputs (`.inputs`: the text, or the utterance ids), and
prints WER/CER (speech) or BLEU (text) and sequence accuracy, computed by
jiwer and sacrebleu over exactly the lines written. With the decode hparam
`return_beams`, each line holds every beam and its score, tab separated
(`beam<TAB>score<TAB>beam<TAB>score...`, best first). A missing output
directory is created before decoding.

For a speech model with a CTC head, `<decode_to_file>.words.jsonl` holds,
line for line, the text and its words with start and end seconds and a
confidence (`decoding/timing/word_times.py`); with audio files, `--output_format`
also writes one txt/json/srt/vtt file per audio file beside it.

With the decode hparam `chunk_frames=N` (a model trained with
`use_dynamic_chunk`), speech is streamed instead: each recording is fed in
chunks of N encoder frames (N x 40 ms) to `streaming.StreamingRecognizer`,
and the final transcripts are written and scored as above, with the
real-time factor and latencies in `<decode_to_file>.streaming.json`.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
from absl import flags

from t2t_lite.cli import common
from t2t_lite.data import shards
from t2t_lite.data.audio_io import AudioError, read_audio
from t2t_lite.data.problem import EVAL, TEST
from t2t_lite.decoding.audio.input_limits import max_input_tokens
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    load_trained_model,
)
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation import scoring, speaker_groups
from t2t_lite.decoding.input_batches import (
    InputListError,
    encode_text_lines,
    read_input_lines,
    record_text_batches,
    record_waveform_batches,
    text_batches,
    waveform_batches,
)
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.decoding.timing import subtitles
from t2t_lite.run_dir import write_atomically
from t2t_lite.streaming.simulation import StreamingTranscriber

if "decode_hparams" not in flags.FLAGS:  # the trainer defines it too
    flags.DEFINE_string("decode_hparams", "", 'Decode settings: "beam_size=4,alpha=0.6,...".')
flags.DEFINE_string("decode_from_file", None, "Text lines, or audio paths, one per line.")
flags.DEFINE_string("decode_to_file", None, "Where hypotheses are written, one per line.")
flags.DEFINE_string("checkpoint_path", None, "A checkpoint prefix or directory to decode with.")
flags.DEFINE_string("dataset_split", None, "test or dev (default: test if it exists, else dev).")
flags.DEFINE_enum(
    "output_format",
    None,
    list(subtitles.OUTPUT_FORMATS),
    "With audio in --decode_from_file: also write one file per audio file, named after it, "
    "beside --decode_to_file: its text (txt), text and timed words (json), or subtitles "
    "(srt, vtt).",
)

FLAGS = flags.FLAGS


def _lines_out(decoded: list[dict], return_beams: bool) -> list[str]:
    """One line per result: the best hypothesis, or every beam and its score
    tab separated (T2T's return_beams with write_beam_scores); blank stays blank."""
    if not return_beams:
        return [d["hypothesis"] for d in decoded]
    lines = []
    for d in decoded:
        pairs = zip(d["beams"], d["scores"], strict=True)
        lines.append("\t".join(f"{beam}\t{score:.4f}" for beam, score in pairs))
    return lines


def _lines_to_decode() -> list[str] | None:
    """The --decode_from_file lines, read before the model loads: a bad list fails fast."""
    if not FLAGS.decode_from_file:
        return None
    try:
        lines = read_input_lines(FLAGS.decode_from_file)
    except (InputListError, OSError) as error:
        raise common.CliError(str(error)) from error
    if not any(lines):
        raise common.CliError(f"--decode_from_file {FLAGS.decode_from_file} has no lines.")
    return lines


def _transcribed(transcriber, waveforms, lengths, references=None, inputs=None) -> list[dict]:
    """A batch's transcripts: every beam and its score, and with a CTC head the
    best beam's timed words."""
    if transcriber.timed_words:
        results = transcriber.timed(waveforms, lengths)
    else:
        results = [(beams, scores, None) for beams, scores in transcriber(waveforms, lengths)]
    count = len(results)
    return [
        {
            "hypothesis": beams[0],
            "beams": beams,
            "scores": scores,
            "words": words,
            "reference": reference,
            "input": source,
        }
        for (beams, scores, words), reference, source in zip(
            results, references or [None] * count, inputs or [None] * count, strict=True
        )
    ]


def _write_word_times(target: str, decoded: list[dict], sources: list[str]) -> str:
    """`<target>.words.jsonl`: per line, the audio, its text and its timed words."""
    path = target + ".words.jsonl"
    lines = [
        subtitles.to_json(d["hypothesis"], d.get("words") or [], source or None)
        for d, source in zip(decoded, sources, strict=True)
    ]
    write_atomically(path, "\n".join(lines) + "\n")
    return path


def _write_per_audio(target: str, decoded: list[dict], paths: list[str]) -> int:
    """One `--output_format` file per audio file, named after it, beside `target`."""
    directory, written, taken = os.path.dirname(os.path.abspath(target)), 0, set()
    for d, path in zip(decoded, paths, strict=True):
        if not path:
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        name, number = stem, 1
        while name in taken:  # two audio files of one name, in other directories
            number += 1
            name = f"{stem}-{number}"
        taken.add(name)
        text = subtitles.render(FLAGS.output_format, d["hypothesis"], d.get("words") or [])
        write_atomically(os.path.join(directory, f"{name}.{FLAGS.output_format}"), text)
        written += 1
    return written


def _searched(decoder, features, encoder) -> list[dict]:
    """Text search results of one batch: every beam's text and score, best first."""
    ids, scores = decoder(features)
    return [
        {
            "hypothesis": encoder.decode(row[0]),
            "beams": [encoder.decode(beam) for beam in row],
            "scores": [float(score) for score in row_scores],
        }
        for row, row_scores in zip(ids, scores, strict=True)
    ]


def _with_blank_lines(lines: list[str], decoded: list[dict]) -> list[dict]:
    """`decoded` (one per non-blank line) spread back over `lines`: blank stays blank."""
    answers = iter(decoded)
    blank = {"hypothesis": "", "beams": [], "scores": [], "words": []}
    return [next(answers) if line else blank for line in lines]


def _decode_file(settings, decoder, decode_config, lines: list[str], target: str) -> str:
    problem, data_dir = settings.problem, settings.data_dir
    encoder = problem.feature_encoders(data_dir)["targets"]
    decoded, soundless = [], 0
    if settings.problem.input_modality == "speech":
        # Read before decoding, so a missing or undecodable file fails early,
        # naming it. A file with no samples, or with NaN samples, is read as
        # the SavedModel reads such a request: it decodes to an empty line.
        waveforms = [read_audio(path, strict=False) for path in lines if path]
        soundless = sum(not np.any(waveform) for waveform in waveforms)
        for batch, lengths in waveform_batches(waveforms, decode_config.batch_size):
            decoded += _transcribed(decoder, batch, lengths)
    else:
        encoded = _encoded_lines(settings, lines)
        for features in text_batches(encoded, decode_config.batch_size):
            decoded += _searched(decoder, features, encoder)
    decoded = _with_blank_lines(lines, decoded)
    write_atomically(target, "\n".join(_lines_out(decoded, decode_config.return_beams)) + "\n")
    extra = ""
    if settings.problem.input_modality == "speech" and decoder.timed_words:
        extra += f"; word times in {_write_word_times(target, decoded, lines)}"
    if FLAGS.output_format:
        written = _write_per_audio(target, decoded, lines)
        extra += f"; {written} .{FLAGS.output_format} files beside it"
    blank = lines.count("")
    blanks = f" ({blank} blank line{'s' if blank != 1 else ''} left blank)" if blank else ""
    if soundless:
        plural = "s" if soundless != 1 else ""
        blanks += f" ({soundless} audio file{plural} with no sound decoded as empty lines)"
    return f"decoded {len(decoded)} lines of {FLAGS.decode_from_file} into {target}{blanks}{extra}"


def _encoded_lines(settings, lines: list[str]) -> list[np.ndarray]:
    """The non-blank text lines as ids, checked as the SavedModel checks them."""
    encoder = settings.problem.feature_encoders(settings.data_dir)["inputs"]
    try:
        return encode_text_lines(
            encoder, lines, FLAGS.decode_from_file, max_input_tokens(settings.hparams)
        )
    except InputListError as error:
        raise common.CliError(str(error)) from error


def _default_split(problem, data_dir: str | None) -> str:
    if not data_dir:
        raise common.CliError(
            "--data_dir is required to decode a dataset split (the run's flags.json names none)."
        )
    if FLAGS.dataset_split:
        return FLAGS.dataset_split
    return TEST if shards.existing_shards(data_dir, problem.name, TEST) else EVAL


def _decode_split(settings, decoder, decode_config, split: str, target: str) -> str:
    problem, data_dir = settings.problem, settings.data_dir
    encoder = problem.feature_encoders(data_dir)["targets"]
    decoded = []
    if settings.problem.input_modality == "speech":
        # From the records' waveforms, as the SavedModel transcribes them.
        batches = record_waveform_batches(problem, data_dir, split, decode_config.batch_size)
        for waveforms, lengths, targets, utterance_ids in batches:
            references = [encoder.decode(row) for row in targets]
            decoded += _transcribed(decoder, waveforms, lengths, references, utterance_ids)
    else:
        # Every example in record order, in fixed-size batches: none dropped.
        inputs_encoder = problem.feature_encoders(data_dir).get("inputs", encoder)
        batches = record_text_batches(
            problem, data_dir, split, settings.hparams, decode_config.batch_size
        )
        for features in batches:
            searched = _searched(decoder, features, encoder)
            targets = features["targets"].numpy()
            inputs = features["inputs"].numpy() if "inputs" in features else None
            for row, result in enumerate(searched):
                result["reference"] = encoder.decode(targets[row])
                result["input"] = inputs_encoder.decode(inputs[row]) if inputs is not None else ""
            decoded += searched
    hypotheses = [d["hypothesis"] for d in decoded]
    references = [d["reference"] for d in decoded]
    write_atomically(target, "\n".join(_lines_out(decoded, decode_config.return_beams)) + "\n")
    write_atomically(target + ".targets", "\n".join(references) + "\n")
    write_atomically(target + ".inputs", "\n".join(d["input"] or "" for d in decoded) + "\n")
    scores = scoring.score(scoring.decode_metrics(problem), hypotheses, references)
    scores["examples"] = len(decoded)
    breakdown = {}
    if settings.problem.input_modality == "speech":
        breakdown = speaker_groups.speaker_breakdown(
            hypotheses,
            references,
            [d["input"] or "" for d in decoded],
            speaker_groups.read_speakers(problem, data_dir, split),
        )
    write_atomically(
        target + ".metrics.json", json.dumps({**scores, **breakdown}, indent=2, sort_keys=True)
    )
    if settings.problem.input_modality == "speech" and decoder.timed_words:
        _write_word_times(target, decoded, [d["input"] or "" for d in decoded])
    summary = ", ".join(
        f"{name.upper() if name in ('wer', 'cer', 'bleu') else name} {value:.4f}"
        if isinstance(value, float)
        else f"{name} {value}"
        for name, value in scores.items()
    )
    message = f"{problem.name} {split}: {summary} (hypotheses in {target})"
    if breakdown:
        message += f"\n{problem.name} {split} by speaker: {speaker_groups.summary_line(breakdown)}"
    return message


def _streaming_report(transcriber: StreamingTranscriber, target: str) -> str:
    """`<target>.streaming.json` (real-time factor, latencies) and its summary line."""
    summary = transcriber.summary()
    path = target + ".streaming.json"
    write_atomically(path, json.dumps(summary, indent=2, sort_keys=True))
    return (
        f"; streamed in {summary['chunk_ms']:.0f} ms chunks: real-time factor "
        f"{summary['real_time_factor']:.3f}, chunk compute p50 "
        f"{summary['chunk_compute_ms_p50']:.1f} ms, final latency p50 "
        f"{summary['final_latency_ms_p50']:.0f} ms (in {path})"
    )


def _output_path(settings, split: str | None) -> str:
    """Where the hypotheses go; its directory is created now, before any decoding."""
    if FLAGS.decode_from_file:
        target = FLAGS.decode_to_file or FLAGS.decode_from_file + ".decodes"
    else:
        target = FLAGS.decode_to_file or os.path.join(settings.output_dir, f"decode_{split}.txt")
    directory = os.path.dirname(os.path.abspath(target))
    try:
        tf.io.gfile.makedirs(directory)
    except (OSError, tf.errors.OpError) as error:
        raise common.CliError(
            f"cannot create {directory} for --decode_to_file {target} ({error}); "
            "pass a writable path."
        ) from error
    return target


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    output_dir = common.require_flag("output_dir")
    decode_config = DecodeConfig.parse(FLAGS.decode_hparams)
    lines = _lines_to_decode()  # a list that is not text fails before anything else
    settings = common.run_settings(output_dir, ignored=("tmp_dir",))
    problem, data_dir = settings.problem, settings.data_dir
    if FLAGS.output_format and not (lines and problem.input_modality == "speech"):
        raise common.CliError(
            "--output_format writes one file per audio file: give audio paths with "
            f"--decode_from_file (problem {problem.name} takes {problem.input_modality or 'no'} "
            "inputs)."
            if lines
            else "--output_format writes one file per audio file: give audio paths with "
            "--decode_from_file."
        )
    if lines and problem.input_modality != "speech":
        _encoded_lines(settings, lines)  # a bad line fails before the model loads
    split = None if lines else _default_split(problem, data_dir)
    target = _output_path(settings, split)
    try:
        model, hparams, checkpoint = load_trained_model(
            output_dir, problem, data_dir, settings.model_name, FLAGS.checkpoint_path
        )
    except (FileNotFoundError, CheckpointNotFoundError, CheckpointMismatchError) as error:
        raise common.CliError(str(error)) from error
    try:
        decoder = BatchDecoder(model, hparams, decode_config)
    except ValueError as error:  # decode hparams the model cannot honour
        raise common.CliError(str(error)) from error
    if problem.input_modality == "speech":
        encoder = problem.feature_encoders(data_dir)["targets"]
        decoder = WaveformTranscriber(model, hparams, decode_config, decoder.cap, encoder)
        if decode_config.chunk_frames > 0:
            try:
                decoder = StreamingTranscriber(
                    model, hparams, decode_config, encoder, decode_config.chunk_frames
                )
            except ValueError as error:  # a model that cannot stream
                raise common.CliError(str(error)) from error
    try:
        if lines:
            message = _decode_file(settings, decoder, decode_config, lines, target)
        else:
            message = _decode_split(settings, decoder, decode_config, split, target)
        if isinstance(decoder, StreamingTranscriber):
            message += _streaming_report(decoder, target)
    except (AudioError, OSError) as error:
        raise common.CliError(str(error)) from error
    except tf.errors.DataLossError as error:  # a dev/test shard damaged in place
        raise common.damaged_data_error(problem, data_dir, (TEST, EVAL), error) from error
    print(f"{message} [checkpoint {os.path.basename(checkpoint)}]")
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
