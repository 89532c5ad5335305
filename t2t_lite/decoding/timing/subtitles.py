"""Timed words -> subtitles (SubRip, WebVTT), JSON and plain text.

Words are grouped into cues as subtitle guidelines ask (the BBC's and
Netflix's, roughly): at most two lines of at most 42 characters, at most 7
seconds on screen, and a new cue after a pause of more than 0.5 s, so a cue
never spans a silence. Pure Python: the decoder writes these from the timed
words the model returns (`word_times.WordTimes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

MAX_LINE_CHARS = 42
MAX_LINES = 2
MAX_CUE_SECONDS = 7.0
MAX_PAUSE_SECONDS = 0.5

OUTPUT_FORMATS = ("txt", "json", "srt", "vtt")


@dataclass(frozen=True)
class TimedWord:
    """One word and when it was said (seconds; -1 when it could not be aligned)."""

    word: str
    start: float
    end: float
    confidence: float


@dataclass(frozen=True)
class Cue:
    """One subtitle: its lines and when it shows."""

    start: float
    end: float
    lines: tuple[str, ...]


def _placed(words: Sequence[TimedWord]) -> list[TimedWord]:
    """Unaligned words (-1) take the time where the word before them ends."""
    placed, clock = [], 0.0
    for word in words:
        if word.start < 0 or word.end < word.start:
            word = TimedWord(word.word, clock, clock, word.confidence)
        placed.append(word)
        clock = max(clock, word.end)
    return placed


def _wrap(words: Sequence[str], width: int) -> list[str]:
    """Greedy lines of at most `width` characters (a longer word gets its own line)."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def group_cues(words: Sequence[TimedWord]) -> list[Cue]:
    """Groups timed words into cues (see the module docstring for the rules).

    Example:
    >>> words = [TimedWord("hello", 0.1, 0.4, 1.0), TimedWord("there", 0.5, 0.9, 1.0),
    ...          TimedWord("again", 2.0, 2.4, 1.0)]
    >>> [(c.start, c.end, c.lines) for c in group_cues(words)]
    [(0.1, 0.9, ('hello there',)), (2.0, 2.4, ('again',))]
    """
    cues: list[Cue] = []
    current: list[TimedWord] = []

    def flush():
        if current:
            lines = _wrap([w.word for w in current], MAX_LINE_CHARS)
            cues.append(Cue(current[0].start, current[-1].end, tuple(lines)))
            current.clear()

    for word in _placed(words):
        if current:
            pause = word.start - current[-1].end
            too_long = word.end - current[0].start > MAX_CUE_SECONDS
            too_many = len(_wrap([w.word for w in current] + [word.word], MAX_LINE_CHARS))
            if pause > MAX_PAUSE_SECONDS or too_long or too_many > MAX_LINES:
                flush()
        current.append(word)
    flush()
    return cues


def _clock(seconds: float, decimal: str) -> str:
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def to_srt(words: Sequence[TimedWord]) -> str:
    """SubRip text: numbered cues, `HH:MM:SS,mmm --> HH:MM:SS,mmm`."""
    blocks = []
    for number, cue in enumerate(group_cues(words), start=1):
        timing = f"{_clock(cue.start, ',')} --> {_clock(cue.end, ',')}"
        blocks.append("\n".join([str(number), timing, *cue.lines]))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def to_vtt(words: Sequence[TimedWord]) -> str:
    """WebVTT text: a `WEBVTT` header, then cues timed `HH:MM:SS.mmm --> HH:MM:SS.mmm`."""
    blocks = ["WEBVTT"]
    for cue in group_cues(words):
        timing = f"{_clock(cue.start, '.')} --> {_clock(cue.end, '.')}"
        blocks.append("\n".join([timing, *cue.lines]))
    return "\n\n".join(blocks) + "\n"


def to_json(text: str, words: Sequence[TimedWord], source: str | None = None) -> str:
    """One JSON object (a line of a JSON-lines file): the text and its timed words."""
    record = {} if source is None else {"audio": source}
    record["text"] = text
    record["words"] = [
        {
            "word": w.word,
            "start": round(w.start, 3),
            "end": round(w.end, 3),
            "confidence": round(w.confidence, 4),
        }
        for w in words
    ]
    return json.dumps(record, ensure_ascii=False)


def render(output_format: str, text: str, words: Sequence[TimedWord]) -> str:
    """`text` and `words` in one of `OUTPUT_FORMATS`."""
    if output_format == "txt":
        return text + "\n"
    if output_format == "json":
        return to_json(text, words) + "\n"
    if output_format == "srt":
        return to_srt(words)
    if output_format == "vtt":
        return to_vtt(words)
    raise ValueError(
        f"output format must be one of {', '.join(OUTPUT_FORMATS)}, got {output_format!r}."
    )
