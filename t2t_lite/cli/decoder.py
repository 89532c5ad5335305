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
(symbols in the vocabulary, at most `RunConfig.max_input_tokens`
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
directory is created before decoding. A mixed problem (`data/mixed_problem.py`)
decodes each member's split in turn (`<split>_<member>`), each to its own
file and with its own line of results.

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

import tensorflow as tf
from absl import flags

from t2t_lite.cli import common
from t2t_lite.data.audio_io import AudioError
from t2t_lite.data.problem import EVAL, TEST
from t2t_lite.decoders import decoder_for
from t2t_lite.decoding.checkpoints.run_decode_config import decode_config_for_run
from t2t_lite.decoding.checkpoints.trained_model import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    TrainedRun,
)
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation import scoring, speaker_groups
from t2t_lite.decoding.input_batches import InputListError, read_input_lines
from t2t_lite.decoding.result import BLANK, Decoded
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.timing import subtitles
from t2t_lite.run_dir import write_atomically

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


def _lines_out(decoded: list[Decoded], return_beams: bool) -> list[str]:
    """One line per result: the best hypothesis, or every beam and its score.

    Beams and scores are tab separated (T2T's return_beams with
    write_beam_scores); blank stays blank.
    """
    if not return_beams:
        return [d.text for d in decoded]
    return [
        "\t".join(f"{beam}\t{score:.4f}" for beam, score in zip(d.beams, d.scores, strict=True))
        for d in decoded
    ]


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


def _write_word_times(target: str, decoded: list[Decoded]) -> str:
    """`<target>.words.jsonl`: per line, the audio, its text and its timed words."""
    path = target + ".words.jsonl"
    lines = [subtitles.to_json(d.text, list(d.words or []), d.source or None) for d in decoded]
    write_atomically(path, "\n".join(lines) + "\n")
    return path


def _write_per_audio(target: str, decoded: list[Decoded]) -> int:
    """One `--output_format` file per audio file, named after it, beside `target`."""
    directory, written, taken = os.path.dirname(os.path.abspath(target)), 0, set()
    for d in decoded:
        if not d.source:
            continue
        stem = os.path.splitext(os.path.basename(d.source))[0]
        name, number = stem, 1
        while name in taken:  # two audio files of one name, in other directories
            number += 1
            name = f"{stem}-{number}"
        taken.add(name)
        text = subtitles.render(FLAGS.output_format, d.text, list(d.words or []))
        write_atomically(os.path.join(directory, f"{name}.{FLAGS.output_format}"), text)
        written += 1
    return written


def _decoded(decoder, batches) -> list[Decoded]:
    return [result for batch in batches for result in decoder.decode(batch)]


def _decode_file(decoder, lines: list[str], checked: list, target: str) -> str:
    """Decodes the non-blank `lines` (`checked`: as `check_lines` returned them)."""
    decoded = iter(_decoded(decoder, decoder.line_batches(checked)))
    decoded = [next(decoded) if line else BLANK for line in lines]  # blank stays blank
    write_atomically(target, "\n".join(_lines_out(decoded, decoder.config.return_beams)) + "\n")
    extra = ""
    if decoder.timed_words:
        extra += f"; word times in {_write_word_times(target, decoded)}"
    if FLAGS.output_format:
        written = _write_per_audio(target, decoded)
        extra += f"; {written} .{FLAGS.output_format} files beside it"
    blank = lines.count("")
    blanks = f" ({blank} blank line{'s' if blank != 1 else ''} left blank)" if blank else ""
    blanks += decoder.notes()
    return f"decoded {len(decoded)} lines of {FLAGS.decode_from_file} into {target}{blanks}{extra}"


def _default_split(problem, data_dir: str | None) -> str:
    if not data_dir:
        raise common.CliError(
            "--data_dir is required to decode a dataset split (the run's flags.json names none)."
        )
    if FLAGS.dataset_split:
        return FLAGS.dataset_split
    return TEST if problem.has_split(data_dir, TEST) else EVAL


def _decode_split(settings, decoder, split: str, target: str) -> str:
    problem = settings.problem
    decoded = _decoded(decoder, decoder.split_batches(split))
    hypotheses = [d.text for d in decoded]
    references = [d.reference or "" for d in decoded]
    sources = [d.source or "" for d in decoded]
    write_atomically(target, "\n".join(_lines_out(decoded, decoder.config.return_beams)) + "\n")
    write_atomically(target + ".targets", "\n".join(references) + "\n")
    write_atomically(target + ".inputs", "\n".join(sources) + "\n")
    scores = scoring.score(scoring.decode_metrics(problem), hypotheses, references)
    scores["examples"] = len(decoded)
    speakers = speaker_groups.read_speakers(problem, settings.data_dir, split)
    breakdown = speaker_groups.speaker_breakdown(hypotheses, references, sources, speakers)
    write_atomically(
        target + ".metrics.json", json.dumps({**scores, **breakdown}, indent=2, sort_keys=True)
    )
    if decoder.timed_words:
        _write_word_times(target, decoded)
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


def _streaming_report(decoder, target: str) -> str:
    """`<target>.streaming.json` and its summary line, when the decoder streamed; else "".

    The file holds the real-time factor and latencies.
    """
    summary = decoder.report(target)
    if summary is None:
        return ""
    path = target + ".streaming.json"
    write_atomically(path, json.dumps(summary, indent=2, sort_keys=True))
    return (
        f"; streamed in {summary['chunk_ms']:.0f} ms chunks: real-time factor "
        f"{summary['real_time_factor']:.3f}, chunk compute p50 "
        f"{summary['chunk_compute_ms_p50']:.1f} ms, final latency p50 "
        f"{summary['final_latency_ms_p50']:.0f} ms (in {path})"
    )


def _output_path(settings, split: str | None, several: bool = False) -> str:
    """Where the hypotheses go; its directory is created now, before any decoding.

    With `several` splits (a mixed problem's members), `--decode_to_file`
    gains the split's name before its extension.
    """
    if FLAGS.decode_from_file:
        target = FLAGS.decode_to_file or FLAGS.decode_from_file + ".decodes"
    elif FLAGS.decode_to_file and several:
        stem, extension = os.path.splitext(FLAGS.decode_to_file)
        target = f"{stem}_{split}{extension}"
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
    try:
        kind = decoder_for(problem)
    except ValueError as error:
        raise common.CliError(str(error)) from error
    if FLAGS.output_format and not (lines and kind.writes_audio_files):
        raise common.CliError(
            "--output_format writes one file per audio file: give audio paths with "
            "--decode_from_file"
            + (f" (problem {problem.name} takes text inputs)." if lines else ".")
        )
    if lines:
        try:  # a bad line fails before the model loads
            checked = kind.check_lines(
                problem, data_dir, RunConfig.from_hparams(settings.hparams), lines,
                FLAGS.decode_from_file,
            )  # fmt: skip
        except InputListError as error:
            raise common.CliError(str(error)) from error
    # A mixed problem's split is decoded and reported member by member.
    splits = [None] if lines else problem.decode_splits(data_dir, _default_split(problem, data_dir))
    targets = {split: _output_path(settings, split, len(splits) > 1) for split in splits}
    try:
        run = TrainedRun.of(
            output_dir,
            problem,
            model_name=settings.model_name,
            data_dir=data_dir,
            checkpoint_path=FLAGS.checkpoint_path,
        )
        model, checkpoint = run.restored_model()
    except (FileNotFoundError, CheckpointNotFoundError, CheckpointMismatchError) as error:
        raise common.CliError(str(error)) from error
    try:
        decode_config, note = decode_config_for_run(decode_config, model, output_dir, checkpoint)
        if note:
            print(note)
        decoder = kind(model, run, decode_config)
    except ValueError as error:  # a bad calibration, settings the model cannot honour
        raise common.CliError(str(error)) from error
    try:
        messages = []
        for split, target in targets.items():
            if lines:
                message = _decode_file(decoder, lines, checked, target)
            else:
                message = _decode_split(settings, decoder, split, target)
            messages.append(message + _streaming_report(decoder, target))
        message = "\n".join(messages)
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
