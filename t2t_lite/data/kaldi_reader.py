"""Reading a Kaldi data directory: `text`, `wav.scp`, `utt2spk` and friends.

A Kaldi data directory (Kaldi's "Data preparation" page) lists a corpus's
utterances in small text files, one `<key> <value>` line each:

    text         <utterance-id> <transcript>
    wav.scp      <recording-id> <audio path>
    segments     <utterance-id> <recording-id> <start s> <end s>   (optional)
    utt2spk      <utterance-id> <speaker-id>                       (optional)
    spk2gender   <speaker-id> <m|f>                                (optional)
    spk2age      <speaker-id> <years>                              (optional;
                 not Kaldi's own, speechocean762 ships it)

Without `segments` a recording id is an utterance id. Relative audio paths
are resolved against `audio_root` (Kaldi recipes resolve them against the
recipe's directory; a corpus tarball against its top directory). Keys and
values are split at the first run of spaces or tabs.

Bad lines never stop a run; each is skipped and counted under one of the
`SKIP_*` reasons: a transcript with no audio, audio with no transcript, a
`wav.scp` entry that is a command (`sox ... |`) or an archive offset
(`feats.ark:12`), which need Kaldi to read (run Kaldi's
`wav-copy`/`extract-segments` to write the audio out as files first), a
non-UTF-8 line, an empty transcript, a duplicate id.

    report = SplitReport()
    files = list_kaldi_dir("/raw/speechocean762/train", "/raw/speechocean762", report)
    for utterance in read_utterance_files(files, report, label="train"):
        ...
"""

from __future__ import annotations

import os

from t2t_lite.data.problem import DataError, SplitReport
from t2t_lite.data.speech_problem import Speaker
from t2t_lite.data.utterance_files import UtteranceFile

SKIP_NO_AUDIO = "transcript with no wav.scp entry"
SKIP_NO_TRANSCRIPT = "wav.scp entry with no transcript"
SKIP_COMMAND = "wav.scp entry is a command or an archive offset (write the audio out as files)"
SKIP_NON_UTF8 = "non-UTF-8 line"
SKIP_EMPTY_TRANSCRIPT = "empty transcript"  # the name SpeechRecognitionProblem uses
SKIP_DUPLICATE = "duplicate id"
SKIP_BAD_SEGMENT = "segments line without a valid start and end"
SKIP_NO_VALUE = "line with an id and nothing else"

REQUIRED_FILES = ("text", "wav.scp")


def read_table(path: str, report: SplitReport, allow_empty_value: bool = False) -> dict[str, str]:
    """One Kaldi table file: key -> value (the rest of the line, stripped).

    Args:
      path: the file.
      report: counts non-UTF-8 lines, duplicate keys and (unless
        `allow_empty_value`) lines with a key and nothing else.
      allow_empty_value: keep a key with nothing after it (its value "").

    Returns:
      The table, in file order; the first line of a duplicated key wins.

    Example:
      >>> read_table("data/train/utt2spk", SplitReport())  # doctest: +SKIP
      {'000010011': '0001', ...}
    """
    table: dict[str, str] = {}
    with open(path, "rb") as handle:
        for raw_line in handle:
            try:
                line = raw_line.decode("utf-8").strip()
            except UnicodeDecodeError:
                report.skip(SKIP_NON_UTF8)
                continue
            if not line:
                continue
            parts = line.split(maxsplit=1)
            key, value = parts[0], parts[1].strip() if len(parts) > 1 else ""
            if key in table:
                report.skip(SKIP_DUPLICATE)
            elif value or allow_empty_value:
                table[key] = value
            else:
                report.skip(SKIP_NO_VALUE)
    return table


def _optional_table(data_dir: str, name: str) -> dict[str, str]:
    path = os.path.join(data_dir, name)
    return read_table(path, SplitReport()) if os.path.isfile(path) else {}


def _is_command(entry: str) -> bool:
    """A `wav.scp` value Kaldi pipes through a program or reads at an offset."""
    return entry.endswith("|") or entry.startswith("|") or ".ark:" in entry


def read_speakers(data_dir: str) -> dict[str, Speaker]:
    """Speaker id -> Speaker, from `spk2gender` and `spk2age` (both optional).

    Example:
      >>> read_speakers("speechocean762/train")["0001"]  # doctest: +SKIP
      Speaker(speaker_id='0001', age=6, gender='m')
    """
    genders = _optional_table(data_dir, "spk2gender")
    ages = _optional_table(data_dir, "spk2age")
    speakers = {}
    for speaker_id in genders.keys() | ages.keys():
        age = ages.get(speaker_id, "")
        speakers[speaker_id] = Speaker(
            speaker_id=speaker_id,
            age=int(age) if age.isdigit() else None,
            gender=genders.get(speaker_id) or None,
        )
    return speakers


def _segments(data_dir: str, report: SplitReport) -> dict[str, tuple[str, float, float]] | None:
    """utterance id -> (recording id, start s, end s), or None without `segments`."""
    path = os.path.join(data_dir, "segments")
    if not os.path.isfile(path):
        return None
    segments = {}
    for utterance_id, value in read_table(path, report).items():
        fields = value.split()
        try:
            start, end = float(fields[1]), float(fields[2])
        except (IndexError, ValueError):
            report.skip(SKIP_BAD_SEGMENT)
            continue
        # Kaldi's end -1 means "to the end of the recording".
        if start < 0 or (end != -1 and end <= start):
            report.skip(SKIP_BAD_SEGMENT)
            continue
        segments[utterance_id] = (fields[0], start, end)
    return segments


def list_kaldi_dir(data_dir: str, audio_root: str, report: SplitReport) -> list[UtteranceFile]:
    """The utterances of a Kaldi data directory, sorted by id, without reading audio.

    Args:
      data_dir: the directory holding `text` and `wav.scp`.
      audio_root: what relative `wav.scp` paths are relative to.
      report: counts every skipped line under its `SKIP_*` reason.

    Returns:
      One `UtteranceFile` per usable utterance, with its speaker where
      `utt2spk` names one (age and gender from `spk2age` / `spk2gender`).

    Raises:
      DataError: `data_dir` lacks `text` or `wav.scp`.

    Example:
      >>> files = list_kaldi_dir("so762/test", "so762", SplitReport())  # doctest: +SKIP
      >>> files[0].transcript, files[0].speaker.age  # doctest: +SKIP
      ('MARK IS GOING TO SEE ELEPHANT', 9)
    """
    missing = [name for name in REQUIRED_FILES if not os.path.isfile(os.path.join(data_dir, name))]
    if missing:
        raise DataError(
            f"{data_dir} is not a Kaldi data directory: it has no {' or '.join(missing)} "
            "file; point the problem at a directory with text and wav.scp."
        )
    transcripts = read_table(os.path.join(data_dir, "text"), report, allow_empty_value=True)
    recordings = read_table(os.path.join(data_dir, "wav.scp"), report)
    utt2spk = _optional_table(data_dir, "utt2spk")
    speakers = read_speakers(data_dir)
    segments = _segments(data_dir, report)
    if segments is None:  # each recording is one utterance
        segments = {key: (key, None, None) for key in recordings}
    files = []
    for utterance_id in sorted(transcripts.keys() | segments.keys()):
        if utterance_id not in transcripts:
            report.skip(SKIP_NO_TRANSCRIPT)
            continue
        if not transcripts[utterance_id]:
            report.skip(SKIP_EMPTY_TRANSCRIPT)
            continue
        if utterance_id not in segments or segments[utterance_id][0] not in recordings:
            report.skip(SKIP_NO_AUDIO)
            continue
        recording_id, start, end = segments[utterance_id]
        entry = recordings[recording_id]
        if _is_command(entry):
            report.skip(SKIP_COMMAND)
            continue
        speaker_id = utt2spk.get(utterance_id)
        speaker = None
        if speaker_id is not None:
            speaker = speakers.get(speaker_id, Speaker(speaker_id))
        files.append(
            UtteranceFile(
                utterance_id=utterance_id,
                path=os.path.join(audio_root, entry),  # an absolute entry stays as it is
                transcript=transcripts[utterance_id],
                speaker=speaker,
                start_s=start,
                end_s=None if end is None or end == -1 else end,
            )
        )
    return files
