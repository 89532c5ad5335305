"""Tests for t2t_lite.decoding.timing.subtitles: cues, SubRip, WebVTT, JSON."""

from __future__ import annotations

import json

import pytest

from t2t_lite.decoding.timing import subtitles
from t2t_lite.decoding.timing.subtitles import TimedWord, group_cues


def words_at(*spans, word="word"):
    return [TimedWord(f"{word}{i}", start, end, 0.9) for i, (start, end) in enumerate(spans)]


def test_srt_and_vtt_are_written_to_their_formats():
    words = [TimedWord("hello", 0.12, 0.5, 0.9), TimedWord("world", 0.55, 1.0, 0.8),
             TimedWord("again", 3661.25, 3661.5, 0.7)]  # fmt: skip
    assert subtitles.to_srt(words) == (
        "1\n00:00:00,120 --> 00:00:01,000\nhello world\n\n2\n01:01:01,250 --> 01:01:01,500\nagain\n"
    )
    assert subtitles.to_vtt(words) == (
        "WEBVTT\n\n00:00:00.120 --> 00:00:01.000\nhello world\n\n"
        "01:01:01.250 --> 01:01:01.500\nagain\n"
    )
    assert subtitles.to_vtt([]) == "WEBVTT\n" and subtitles.to_srt([]) == ""


def test_a_pause_longer_than_half_a_second_starts_a_new_cue():
    cues = group_cues(words_at((0.0, 0.3), (0.7, 1.0), (1.6, 1.9)))
    assert [len(cue.lines[0].split()) for cue in cues] == [2, 1]


def test_cues_hold_at_most_two_lines_of_42_characters_and_7_seconds():
    long_words = [TimedWord("abcdefghi", 0.2 * i, 0.2 * i + 0.15, 1.0) for i in range(30)]
    cues = group_cues(long_words)
    assert len(cues) > 1
    for cue in cues:
        assert len(cue.lines) <= 2 and all(len(line) <= 42 for line in cue.lines)
        assert cue.end - cue.start <= 7.0
    assert sum(len(" ".join(c.lines).split()) for c in cues) == 30
    slow = words_at(*[(1.0 * i, 1.0 * i + 0.6) for i in range(12)])
    assert all(c.end - c.start <= 7.0 for c in group_cues(slow))


def test_unaligned_words_keep_their_place_in_time():
    words = [TimedWord("a", 1.0, 1.2, 0.9), TimedWord("b", -1.0, -1.0, 0.0),
             TimedWord("c", 1.3, 1.5, 0.9)]  # fmt: skip
    (cue,) = group_cues(words)
    assert cue.lines == ("a b c",) and cue.start == 1.0 and cue.end == 1.5


def test_json_and_plain_text():
    words = [TimedWord("héllo", 0.1234, 0.5, 0.87654)]
    record = json.loads(subtitles.render("json", "héllo", words))
    assert record == {
        "text": "héllo",
        "words": [{"word": "héllo", "start": 0.123, "end": 0.5, "confidence": 0.8765}],
    }
    assert subtitles.render("txt", "héllo", words) == "héllo\n"
    with pytest.raises(ValueError, match="srt"):
        subtitles.render("ass", "x", words)
