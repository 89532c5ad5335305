"""Any Kaldi-style corpus as a speech recognition problem, in a few lines.

    @registry.register_problem
    class MyCorpus(KaldiSpeechProblem):
        corpus_dir_name = "my_corpus"           # $TMP_DIR/my_corpus/
        data_dirs = {TRAIN: "data/train", EVAL: "data/dev", TEST: "data/test"}

`data_dirs` names each split's Kaldi data directory (`kaldi_reader`) under
`tmp_dir/<corpus_dir_name>/`; relative `wav.scp` paths are relative to that
directory too. A corpus with no dev directory leaves EVAL out and sets
`dev_speakers`: that many training speakers (chosen by a hash of their ids,
so the choice does not depend on the order of files) become dev, and none
of their utterances stay in train, so dev measures unheard speakers as test
does. Without `utt2spk` every utterance is its own speaker.

The training split is written in a seeded shuffled order: a Kaldi directory
lists its utterances speaker by speaker, and the trainer's shuffle buffer
(128 utterances) would otherwise fill each batch with one or two voices.
Transcripts are lower-cased when `lowercase` is set, so that the problem
shares its alphabet with the built-in corpus (which it may be mixed with).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator

from t2t_lite.data.kaldi_reader import list_kaldi_dir
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.data.utterance_files import UtteranceFile, read_utterance_files

TRAIN_ORDER_SEED = 762


def _speaker_key(item: UtteranceFile) -> str:
    return item.speaker.speaker_id if item.speaker else item.utterance_id


def _hash_order(speaker_id: str) -> str:
    return hashlib.sha256(speaker_id.encode("utf-8")).hexdigest()


class KaldiSpeechProblem(SpeechRecognitionProblem):
    """A speech problem read from Kaldi data directories.

    Class attributes:
      corpus_dir_name: the corpus's directory under `tmp_dir`.
      data_dirs: split -> its Kaldi data directory, relative to the corpus
        directory. EVAL may be missing (see `dev_speakers`).
      dev_speakers: training speakers carved out as dev when `data_dirs`
        has no EVAL entry.
      lowercase: lower-case every transcript.
      workers: audio-decoding threads; None means `os.cpu_count()`.
    """

    corpus_dir_name: str = ""
    data_dirs: dict[str, str] = {}
    dev_speakers: int = 0
    lowercase: bool = True
    workers: int | None = None
    num_shards = {TRAIN: 4, EVAL: 1, TEST: 1}

    def corpus_dir(self, tmp_dir: str) -> str:
        """Where the corpus lives: `tmp_dir/<corpus_dir_name>`."""
        return os.path.join(tmp_dir, self.corpus_dir_name)

    def locate_corpus(self, tmp_dir: str) -> str:
        """The corpus directory; a subclass may download and extract it first.

        Raises:
          DataError: the directory is not there (the message says what to do).
        """
        root = self.corpus_dir(tmp_dir)
        if not os.path.isdir(root):
            raise DataError(
                f"{self.name}: no corpus directory {root}; put the extracted corpus there."
            )
        return root

    def _source_dir(self, split: str) -> str | None:
        carved = split == EVAL and EVAL not in self.data_dirs and self.dev_speakers
        return self.data_dirs.get(TRAIN if carved else split)

    def dev_speaker_ids(self, train_files: list[UtteranceFile]) -> set[str]:
        """The training speakers carved out as dev (empty when the corpus has dev)."""
        if EVAL in self.data_dirs or not self.dev_speakers:
            return set()
        speakers = sorted({_speaker_key(item) for item in train_files}, key=_hash_order)
        if len(speakers) <= self.dev_speakers:
            raise DataError(
                f"{self.name}: {len(speakers)} training speakers cannot give "
                f"{self.dev_speakers} dev speakers and keep any for training; "
                "lower dev_speakers or give the corpus a dev directory."
            )
        return set(speakers[: self.dev_speakers])

    def kaldi_files(self, tmp_dir: str, split: str, report: SplitReport) -> list[UtteranceFile]:
        """The corpus's own utterances of `split`, sorted by id, without audio."""
        if self._source_dir(split) is None:
            raise DataError(
                f"{self.name} has no Kaldi directory for its {split!r} split; name one in "
                "data_dirs (or set dev_speakers to carve dev out of train)."
            )
        root = self.locate_corpus(tmp_dir)
        files = list_kaldi_dir(os.path.join(root, self._source_dir(split)), root, report)
        if split in (TRAIN, EVAL) and EVAL not in self.data_dirs and self.dev_speakers:
            dev = self.dev_speaker_ids(files)
            files = [item for item in files if (_speaker_key(item) in dev) == (split == EVAL)]
        return files

    def extra_train_files(self, tmp_dir: str, report: SplitReport) -> list[UtteranceFile]:
        """Utterances trained on beside the corpus's (a subclass adds synthetic speech)."""
        del tmp_dir, report
        return []

    def list_files(self, tmp_dir: str, split: str, report: SplitReport) -> list[UtteranceFile]:
        """The split's utterances, in the order they are written, without audio."""
        files = self.kaldi_files(tmp_dir, split, report)
        if split == TRAIN:
            files = files + self.extra_train_files(tmp_dir, report)
            random.Random(TRAIN_ORDER_SEED).shuffle(files)
        return files

    def _normalize(self, transcript: str) -> str:
        return transcript.lower() if self.lowercase else transcript

    def utterances(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[Utterance]:
        del data_dir
        files = self.list_files(tmp_dir, split, report)
        for utterance in read_utterance_files(files, report, f"{self.name} {split}", self.workers):
            utterance.transcript = self._normalize(utterance.transcript)
            yield utterance

    def transcripts(self, tmp_dir: str, split: str) -> Iterator[str]:
        """The corpus's transcripts of `split`, without reading audio (for vocabularies, text)."""
        for item in self.kaldi_files(tmp_dir, split, SplitReport()):
            yield self._normalize(item.transcript)
