"""A small spoken corpus synthesized offline with eSpeak NG, in LibriSpeech's layout.

The built-in `spoken_synth` problem trains and decodes speech recognition end
to end with no download. `build_corpus` makes its raw data in stages:

1. **Text** (`grammar`): sentences from a small grammar of commands
   and statements, every word with one spelling for its sound.
2. **Plan** (`plan`): each utterance's sentence, voice, speaking
   rate, pitch, noise and silences, drawn from seeded RNGs in the main
   process, so the whole corpus is a function of `CorpusConfig` alone.
3. **Audio** (`audio`): each plan spoken by eSpeak NG, resampled to
   16 kHz, padded and mixed with noise, with each word's start and end
   (`word_times`). Utterances are rendered here in parallel, one eSpeak NG
   helper process per worker.
4. **Long recordings** (`partition_long` in `plan`, `join_with_pauses`
   in `audio`): the `long` subset, for long-form transcription. All
   test utterances, in order, are cut into runs of `long_duration_s`; each
   run's FLACs, read back from the test subset (the very same samples), are
   joined with noisy pauses. Its transcript is the components' transcripts
   joined with spaces, so decoding the run whole is comparable with
   decoding the test split one utterance at a time. Its word times are
   its components' word times, shifted to where each component starts.
5. **Tree** (this module): FLAC files and transcripts laid out exactly like
   LibriSpeech, so the same reader ingests both:

       root/LibriSpeech/{train,dev,test,long}/<speaker>/<chapter>/
           <speaker>-<chapter>.trans.txt     "<speaker>-<chapter>-<utt> text"
           <speaker>-<chapter>-<utt:04d>.flac
       root/LibriSpeech/SPEAKERS.TXT           speaker id -> eSpeak voice
       root/long_recordings.json               long id -> its test utterance ids
       root/word_times.json                    utterance id -> [[word, start_s, end_s], ...]
       root/corpus.json                        marker: parameters + summary

   A speaker id stands for one voice (accent + variant). The tree is built in
   `root.incomplete` and renamed into place after the marker is written, so
   an interrupted run never leaves a tree that looks complete; a tree whose
   marker holds other parameters is rebuilt.

Example:
    >>> config = CorpusConfig(split_sizes={"train": 40, "dev": 8, "test": 8})
    >>> summary = build_corpus("spoken", config)  # doctest: +SKIP
    >>> summary.utterances["train"]  # doctest: +SKIP
    40
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence

from absl import logging

from t2t_lite.data import audio_io
from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.spoken_synth.audio import (
    component_starts,
    join_with_pauses,
    render_utterance,
)
from t2t_lite.data.spoken_synth.espeak import EspeakSynthesizer
from t2t_lite.data.spoken_synth.plan import (
    LONG,
    CorpusConfig,
    LongRecording,
    UtterancePlan,
    plan_corpus,
    plan_long,
)
from t2t_lite.data.spoken_synth.spoken_word_times import (
    WordTime,
    load_word_times,
    shift_word_times,
    write_word_times,
)

MARKER_NAME = "corpus.json"
LONG_MAPPING_NAME = "long_recordings.json"  # {long id: [test utterance ids, in order]}
WORD_TIMES_NAME = "word_times.json"  # {utterance id: [[word, start_s, end_s], ...]}


def _render_all(
    jobs: Sequence[tuple[UtterancePlan, str]], num_workers: int
) -> Iterator[tuple[int, list[WordTime]]]:
    """Renders `jobs` into their FLAC files; yields their sample counts and word times in order.

    Workers are threads, each with its own `EspeakSynthesizer`, whose helper
    process (a fresh fork per utterance) does the synthesis: the CPU-heavy
    part runs in separate processes anyway, and resampling, FFTs and FLAC
    encoding release the GIL, so threads use every core without
    multiprocessing's costs: no re-import of the caller's `__main__` (a
    spawn pool hangs when that script is unguarded) and no fork of a
    parent that runs TensorFlow's threads.
    """
    local = threading.local()
    synthesizers: list[EspeakSynthesizer] = []
    lock = threading.Lock()

    def render(job: tuple[UtterancePlan, str]) -> tuple[int, list[WordTime]]:
        synthesizer = getattr(local, "synthesizer", None)
        if synthesizer is None:
            synthesizer = local.synthesizer = EspeakSynthesizer()
            with lock:
                synthesizers.append(synthesizer)
        plan, path = job
        waveform, words = render_utterance(plan, synthesizer)
        audio_io.write_flac(path, waveform, SAMPLE_RATE)
        return int(waveform.size), words

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, num_workers)) as executor:
            # Submitted in bounded windows, so an error stops the run early
            # instead of after every remaining job.
            window = 64 * max(1, num_workers)
            for start in range(0, len(jobs), window):
                yield from executor.map(render, jobs[start : start + window])
    finally:
        for synthesizer in synthesizers:
            synthesizer.close()


def _write_long(
    staging: str,
    config: CorpusConfig,
    recordings: Sequence[LongRecording],
    test_paths: Mapping[str, str],
    test_words: Mapping[str, Sequence[WordTime]],
) -> tuple[dict[str, int], dict[str, list[WordTime]]]:
    """Writes the long FLACs from the test FLACs and the id mapping.

    Returns:
      The recordings' sample counts and word times (their components' word
      times, from `test_words`, shifted to where each component starts).
    """
    os.makedirs(os.path.join(staging, "LibriSpeech", LONG), exist_ok=True)
    samples, words = {}, {}
    for recording in recordings:
        components = [
            audio_io.to_int16_pcm(audio_io.read_audio(test_paths[utterance_id]))
            for utterance_id in recording.components
        ]  # int16 -> float -> int16 is exact (see audio_io)
        waveform = join_with_pauses(components, config, recording.noise_seed)
        starts = component_starts([component.size for component in components], config)
        words[recording.utterance_id] = [
            word
            for utterance_id, start in zip(recording.components, starts, strict=True)
            for word in shift_word_times(test_words[utterance_id], start)
        ]
        directory = os.path.join(staging, recording.relative_dir)
        os.makedirs(directory, exist_ok=True)
        audio_io.write_flac(
            os.path.join(directory, f"{recording.utterance_id}.flac"), waveform, SAMPLE_RATE
        )
        samples[recording.utterance_id] = int(waveform.size)
    mapping = {recording.utterance_id: list(recording.components) for recording in recordings}
    with open(os.path.join(staging, LONG_MAPPING_NAME), "w", encoding="utf-8") as mapping_file:
        json.dump(mapping, mapping_file, indent=1)
    return samples, words


def read_long_recordings(root: str) -> dict[str, list[str]]:
    """Long recording id -> its test utterance ids, in order, from a built tree.

    Example:
      >>> read_long_recordings("spoken")  # doctest: +SKIP
      {'901-4-0000': ['901-3-0000', '901-3-0001', ...], ...}
    """
    with open(os.path.join(root, LONG_MAPPING_NAME), encoding="utf-8") as mapping_file:
        return json.load(mapping_file)


def read_word_times(root: str) -> dict[str, list[WordTime]]:
    """Utterance id -> when each of its words is said, from a built tree.

    Every split's utterances are there, the long recordings included; times
    are seconds from the start of the utterance's FLAC.

    Example:
      >>> read_word_times("spoken")["901-3-0000"]  # doctest: +SKIP
      [WordTime(word='start', start_s=0.1375, end_s=0.4), ...]
    """
    return load_word_times(os.path.join(root, WORD_TIMES_NAME))


@dataclasses.dataclass
class CorpusSummary:
    """What a corpus tree holds.

    Attributes:
      utterances: split -> number of utterances (long: of long recordings).
      audio_seconds: split -> total audio duration (long: the test audio
        again, plus the pauses).
      reused: the tree existed with the same parameters and was kept.
    """

    utterances: dict[str, int]
    audio_seconds: dict[str, float]
    reused: bool = False


def read_marker(root: str) -> dict | None:
    """The marker of the tree at `root`, or None if it is missing or unreadable."""
    try:
        with open(os.path.join(root, MARKER_NAME), encoding="utf-8") as marker:
            return json.load(marker)
    except (OSError, ValueError):
        return None


def corpus_is_complete(root: str, config: CorpusConfig) -> bool:
    """Whether `root` holds a finished tree made with exactly `config`."""
    marker = read_marker(root)
    return marker is not None and marker.get("parameters") == config.parameters()


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _write_text_files(
    staging: str,
    plans: Mapping[str, Sequence[UtterancePlan | LongRecording]],
    samples: Mapping[str, int],
) -> None:
    """trans.txt per chapter, and LibriSpeech's SPEAKERS.TXT naming the voices."""
    chapters: dict[str, list[str]] = {}
    for split_plans in plans.values():
        for plan in split_plans:
            name = f"{plan.speaker_id}-{plan.chapter_id}.trans.txt"
            chapters.setdefault(os.path.join(plan.relative_dir, name), []).append(
                f"{plan.utterance_id} {plan.text}\n"
            )
    for path, lines in chapters.items():
        with open(os.path.join(staging, path), "w", encoding="utf-8") as transcript:
            transcript.writelines(lines)
    minutes: dict[tuple[int, str, str], float] = {}
    for split, split_plans in plans.items():
        for plan in split_plans:
            key = (plan.speaker_id, split, plan.voice)
            minutes[key] = minutes.get(key, 0.0) + samples[plan.utterance_id] / SAMPLE_RATE / 60
    with open(os.path.join(staging, "LibriSpeech", "SPEAKERS.TXT"), "w", encoding="utf-8") as f:
        f.write("; Synthesized by eSpeak NG: NAME is the voice (accent+variant).\n")
        f.write(";ID  |SEX| SUBSET           |MINUTES| NAME\n")
        for (speaker, split, voice), total in sorted(minutes.items()):
            sex = "F" if voice.split("+")[-1] in ("f1", "f2", "f3", "f4", "f5") else "M"
            f.write(f"{speaker:<5}| {sex} | {split:<17}| {total:5.2f} | {voice}\n")


def build_corpus(root: str, config: CorpusConfig, num_workers: int | None = None) -> CorpusSummary:
    """Synthesizes the corpus into a LibriSpeech-layout tree at `root`, atomically.

    A tree at `root` whose marker holds the same parameters is kept as is;
    one with other parameters (or no marker) is replaced.

    Args:
      root: the tree's directory; `root/LibriSpeech/<split>/...` is written.
      config: the corpus parameters.
      num_workers: synthesis workers (each with its own eSpeak NG process);
        default one per available CPU.

    Returns:
      The tree's `CorpusSummary`.

    Raises:
      EspeakError: eSpeak NG is missing, or a voice does not exist.

    Example:
      >>> build_corpus("spoken", CorpusConfig())  # doctest: +SKIP
      CorpusSummary(utterances={"train": 5000, ...}, ..., reused=False)
    """
    root = os.path.abspath(root)
    if corpus_is_complete(root, config):
        summary = read_marker(root)["summary"]
        return CorpusSummary(summary["utterances"], summary["audio_seconds"], reused=True)
    _check_voices(config)
    plans = plan_corpus(config)
    # A fixed staging name: an interrupted run's leftovers are cleared here.
    staging = root + ".incomplete"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        jobs = []
        for split_plans in plans.values():
            for plan in split_plans:
                directory = os.path.join(staging, plan.relative_dir)
                os.makedirs(directory, exist_ok=True)
                jobs.append((plan, os.path.join(directory, f"{plan.utterance_id}.flac")))
        num_workers = num_workers or _default_workers()
        logging.info(
            "Synthesizing %d utterances with eSpeak NG in %d workers into %s.",
            len(jobs), num_workers, root,
        )  # fmt: skip
        samples, words = {}, {}
        for (plan, _), (count, plan_words) in zip(
            jobs, _render_all(jobs, num_workers), strict=True
        ):
            samples[plan.utterance_id], words[plan.utterance_id] = count, plan_words
        # The long subset, from the test FLACs just written (no synthesis).
        first_chapter = 1 + max((p.chapter_id for ps in plans.values() for p in ps), default=0)
        long_recordings = plan_long(config, plans["test"], samples, first_chapter)
        test_paths = {plan.utterance_id: path for plan, path in jobs if plan.subset == "test"}
        long_samples, long_words = _write_long(staging, config, long_recordings, test_paths, words)
        samples.update(long_samples)
        words.update(long_words)
        plans = {**plans, LONG: long_recordings}
        _write_text_files(staging, plans, samples)
        write_word_times(os.path.join(staging, WORD_TIMES_NAME), words)
        summary = CorpusSummary(
            utterances={split: len(split_plans) for split, split_plans in plans.items()},
            audio_seconds={
                split: round(sum(samples[p.utterance_id] for p in split_plans) / SAMPLE_RATE, 3)
                for split, split_plans in plans.items()
            },
        )
        # The marker last, then the rename: only a finished tree has one.
        marker = {
            "parameters": config.parameters(),
            "summary": {"utterances": summary.utterances, "audio_seconds": summary.audio_seconds},
        }
        with open(os.path.join(staging, MARKER_NAME), "w", encoding="utf-8") as marker_file:
            json.dump(marker, marker_file, indent=1, sort_keys=True)
            marker_file.flush()
            os.fsync(marker_file.fileno())
        _replace_directory(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return summary


def _replace_directory(new: str, target: str) -> None:
    """Moves `new` to `target`, replacing (then deleting) any old `target`."""
    stale = target + ".stale"
    shutil.rmtree(stale, ignore_errors=True)
    if os.path.lexists(target):
        os.rename(target, stale)
    os.rename(new, target)
    shutil.rmtree(stale, ignore_errors=True)


def _check_voices(config: CorpusConfig) -> None:
    """Fails early, with the available names, on a voice eSpeak NG lacks."""
    with EspeakSynthesizer() as synthesizer:
        for voice in (*config.train_voices, *config.test_voices):
            # Synthesizing one word resolves the voice and variant, raising
            # UnknownVoiceError (which lists the choices) before any worker starts.
            synthesizer.synthesize("a", voice=voice)
