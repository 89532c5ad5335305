"""WER broken down by who speaks: age groups and the spread over speakers.

A corpus whose records name their speakers (`speaker_id`, `speaker_age`;
speechocean762 does, LibriSpeech's records do not) gets, beside the split's
WER and CER:

- `groups`: WER and CER of children (under `ADULT_AGE`) and of adults, each
  over exactly its own lines, with its utterance and speaker counts;
- `per_speaker_wer`: each speaker's WER over their own lines, summarized as
  min, quartiles and max, and the speakers at both ends.

    speakers = read_speakers(problem, data_dir, "test")
    breakdown = speaker_breakdown(hypotheses, references, utterance_ids, speakers)
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence

import numpy as np

from t2t_lite.data import shards
from t2t_lite.data.speech_problem import UNKNOWN_AGE, Speaker
from t2t_lite.decoding.evaluation import scoring

# The age of majority; speechocean762's children are 6-15 and its adults
# 19-43, so any cut between 16 and 19 splits it the same way.
ADULT_AGE = 18
CHILDREN, ADULTS = "children", "adults"


def age_group(age: int | None) -> str | None:
    """ "children" under `ADULT_AGE`, else "adults"; None when the age is unknown."""
    if age is None or age < 0:
        return None
    return CHILDREN if age < ADULT_AGE else ADULTS


def read_speakers(problem, data_dir: str, split: str) -> dict[str, Speaker]:
    """Utterance id -> its Speaker, for the records of `split` that name one."""
    spec = {
        name: feature
        for name, feature in problem.example_spec().items()
        if name in ("utterance_id", "speaker_id", "speaker_age", "speaker_gender")
    }
    if "speaker_id" not in spec:
        return {}
    speakers = {}
    for example in shards.read_examples(problem.require_data(data_dir, split), spec):
        speaker_id = example["speaker_id"].numpy().decode("utf-8", "replace")
        if not speaker_id:
            continue
        age = int(example["speaker_age"].numpy())
        gender = example["speaker_gender"].numpy().decode("utf-8", "replace")
        utterance_id = example["utterance_id"].numpy().decode("utf-8", "replace")
        speakers[utterance_id] = Speaker(
            speaker_id, None if age == UNKNOWN_AGE else age, gender or None
        )
    return speakers


def speaker_breakdown(
    hypotheses: Sequence[str],
    references: Sequence[str],
    utterance_ids: Sequence[str],
    speakers: Mapping[str, Speaker],
) -> dict:
    """WER/CER per age group and the spread of per-speaker WER.

    Args:
      hypotheses / references / utterance_ids: the decoded lines, aligned.
      speakers: utterance id -> Speaker (`read_speakers`); lines whose id is
        missing are left out of the breakdown (not out of the split's WER).

    Returns:
      `{}` when no line has a speaker; else `{"groups": {name: {"wer",
      "cer", "utterances", "speakers"}}, "per_speaker_wer": {"speakers",
      "min", "p25", "median", "p75", "max", "worst", "best"}}`.

    Example:
      >>> speakers = {"a": Speaker("1", 9), "b": Speaker("2", 30)}
      >>> speaker_breakdown(["x y", "z"], ["x y", "w"], ["a", "b"], speakers)["groups"]
      {'children': {'wer': 0.0, 'cer': 0.0, 'utterances': 1, 'speakers': 1}, \
'adults': {'wer': 1.0, 'cer': 1.0, 'utterances': 1, 'speakers': 1}}
    """
    by_group: dict[str, list[int]] = collections.defaultdict(list)
    by_speaker: dict[str, list[int]] = collections.defaultdict(list)
    for index, utterance_id in enumerate(utterance_ids):
        speaker = speakers.get(utterance_id)
        if speaker is None:
            continue
        by_speaker[speaker.speaker_id].append(index)
        group = age_group(speaker.age)
        if group:
            by_group[group].append(index)
    if not by_speaker:
        return {}

    def scored(indices: list[int], metrics: tuple[str, ...]) -> dict:
        return scoring.score(
            metrics, [hypotheses[i] for i in indices], [references[i] for i in indices]
        )

    groups = {}
    for name in (CHILDREN, ADULTS):
        if by_group.get(name):
            indices = by_group[name]
            groups[name] = {
                **scored(indices, ("wer", "cer")),
                "utterances": len(indices),
                "speakers": len({speakers[utterance_ids[i]].speaker_id for i in indices}),
            }
    wers = {spk: scored(indices, ("wer",))["wer"] for spk, indices in by_speaker.items()}
    values = np.array(list(wers.values()))
    ranked = sorted(wers, key=wers.get)
    spread = {
        "speakers": len(wers),
        **{
            name: float(np.percentile(values, q))
            for name, q in (("min", 0), ("p25", 25), ("median", 50), ("p75", 75), ("max", 100))
        },
        "best": ranked[:3],
        "worst": ranked[::-1][:3],
    }
    return {"groups": groups, "per_speaker_wer": spread}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def summary_line(breakdown: dict) -> str:
    """One line for the console: each group's WER, then the per-speaker spread."""
    parts = [
        f"{name} WER {group['wer']:.4f} ({_count(group['utterances'], 'utterance')}, "
        f"{_count(group['speakers'], 'speaker')})"
        for name, group in breakdown["groups"].items()
    ]
    spread = breakdown["per_speaker_wer"]
    parts.append(
        f"per-speaker WER median {spread['median']:.4f} "
        f"(quartiles {spread['p25']:.4f}-{spread['p75']:.4f}, "
        f"range {spread['min']:.4f}-{spread['max']:.4f}, {spread['speakers']} speakers)"
    )
    return "; ".join(parts)
