"""spoken_synth: speech recognition on a corpus synthesized offline by eSpeak NG.

The whole system (datagen, training, decoding, export) runs on one machine
with no download:

    t2t-lite-datagen --problem=spoken_synth --data_dir=$DATA --tmp_dir=$RAW

`prepare_data` synthesizes the corpus (`t2t_lite.data.spoken_synth`) into a
LibriSpeech-layout tree at `$RAW/spoken_synth/LibriSpeech/{train,dev,test,long}/`,
one speaker per eSpeak voice, and the splits are then read back with the very
reader the LibriSpeech problems use, so this problem exercises the same path
as real data. The tree is kept once complete; it is rebuilt only when its
parameters (sizes, voices, seed, grammar) change.

Splits: `train` (8 voices, 140-200 wpm, pitch 35-65, 80% with white or pink
noise at 10-30 dB SNR), `dev` (the training voices on sentences absent from
train), `test` (en-us-nyc+f3, an accent and a variant never heard in
training, with mild 25-35 dB noise), `long` (for long-form transcription:
every test utterance again, consecutive ones joined with 0.5 s noisy pauses
into recordings of 20-120 s; `$RAW/spoken_synth/long_recordings.json` maps
each to its test utterance ids). Targets are bytes, as for LibriSpeech. The
trainer reads train and dev only.

Word times: when each word of every utterance (every split, `long`
included) is said, measured at synthesis (`word_times`), are in
`$RAW/spoken_synth/word_times.json` and copied beside the shards as
`$DATA/spoken_synth-word_times.json`: `{utterance id: [[word, start_s,
end_s], ...]}`, the ground truth for word timestamps.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator

from absl import logging

from t2t_lite import registry
from t2t_lite.data.librispeech_reader import read_librispeech_tree
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.data.spoken_synth.corpus import (
    WORD_TIMES_NAME,
    build_corpus,
    corpus_is_complete,
    read_word_times,
)
from t2t_lite.data.spoken_synth.espeak import EspeakError
from t2t_lite.data.spoken_synth.plan import (
    LONG,
    TEST_VOICES,
    TRAIN_VOICES,
    CorpusConfig,
    plan_corpus,
)


@registry.register_problem
class SpokenSynth(SpeechRecognitionProblem):
    """Byte-level speech recognition of synthesized commands and sentences.

    Class attributes (override in a subclass for another corpus, e.g. a tiny
    one in tests):
      split_sizes: utterances per split; the default takes about a minute to
        generate on two cores and holds about 2.8 hours of audio.
      train_voices / test_voices: eSpeak NG voices ("accent+variant").
      corpus_seed: the corpus seed; the same seed gives identical audio.
      long_duration_s: (min, max) target length of the long recordings, s.
      num_workers: synthesis workers; None means one per CPU.

    Example:
      >>> problem = registry.problem("spoken_synth")  # doctest: +SKIP
      >>> problem.generate_data("/data/spoken", "/raw")  # doctest: +SKIP
    """

    split_sizes: dict[str, int] = {TRAIN: 5000, EVAL: 200, TEST: 200}
    num_shards = {TRAIN: 4, EVAL: 1, TEST: 1, LONG: 1}
    train_voices: tuple[str, ...] = TRAIN_VOICES
    test_voices: tuple[str, ...] = TEST_VOICES
    corpus_seed: int = 1234
    long_duration_s: tuple[float, float] = (20.0, 120.0)
    num_workers: int | None = None

    def corpus_config(self) -> CorpusConfig:
        """The parameters of this problem's corpus (stored in the tree's marker)."""
        return CorpusConfig(
            split_sizes=dict(self.split_sizes),
            train_voices=tuple(self.train_voices),
            test_voices=tuple(self.test_voices),
            seed=self.corpus_seed,
            long_duration_s=tuple(self.long_duration_s),
        )

    def corpus_dir(self, tmp_dir: str) -> str:
        """Where the LibriSpeech-layout tree lives: `tmp_dir/<problem name>`."""
        return os.path.join(tmp_dir, self.name)

    def word_times_path(self, data_dir: str) -> str:
        """Where `prepare_data` copies the corpus' word times, beside the shards.

        The file is the tree's `word_times.json`: read it with
        `word_times.load_word_times`.

        Example:
          >>> SpokenSynth().word_times_path("/data")
          '/data/spoken_synth-word_times.json'
        """
        return os.path.join(data_dir, f"{self.name}-{WORD_TIMES_NAME}")

    def prepare_data(self, data_dir: str, tmp_dir: str) -> None:
        """Synthesizes the corpus tree unless a complete one with the same parameters exists.

        The raw tree goes to `tmp_dir`; its word times are copied into
        `data_dir` (when given), where the shards are written later.
        """
        root = self.corpus_dir(tmp_dir)
        try:
            summary = build_corpus(root, self.corpus_config(), self.num_workers)
        except EspeakError as error:
            raise DataError(f"{self.name}: cannot synthesize the corpus: {error}") from error
        # The long recordings repeat the test audio: not counted twice.
        hours = sum(t for s, t in summary.audio_seconds.items() if s != LONG) / 3600
        logging.info(
            "%s: %s corpus in %s: %s utterances, %.2f h of audio.",
            self.name, "kept the" if summary.reused else "synthesized the", root,
            summary.utterances, hours,
        )  # fmt: skip
        if data_dir:
            # Copied then renamed, so a reader never sees half a file.
            target = self.word_times_path(data_dir)
            os.makedirs(data_dir, exist_ok=True)
            shutil.copyfile(os.path.join(root, WORD_TIMES_NAME), target + ".incomplete")
            os.replace(target + ".incomplete", target)

    def transcripts(self, tmp_dir: str, split: str) -> Iterator[str]:
        """`split`'s sentences from the corpus's plan, without synthesizing audio."""
        del tmp_dir
        for plan in plan_corpus(self.corpus_config())[split]:
            yield plan.text

    def utterances(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[Utterance]:
        """Reads `split` back from the tree with the LibriSpeech reader.

        Args:
          data_dir: unused (the tree is under `tmp_dir`).
          tmp_dir: holds the tree; it is synthesized first if incomplete.
          split: "train", "dev", "test" or "long" (the tree's subset names).
          report: counts skipped utterances.

        Returns:
          An iterator of `Utterance`s (16 kHz audio, lower-case transcript,
          the word times measured at synthesis).
        """
        root = self.corpus_dir(tmp_dir)
        if not corpus_is_complete(root, self.corpus_config()):
            self.prepare_data(data_dir, tmp_dir)  # called without generate_data
        word_times = read_word_times(root)
        for utterance in read_librispeech_tree(root, [split], report):
            words = word_times.get(utterance.utterance_id, ())
            yield dataclasses.replace(
                utterance, word_times=tuple((word.start_s, word.end_s) for word in words)
            )
