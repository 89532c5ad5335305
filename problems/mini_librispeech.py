"""Mini LibriSpeech: real LibriSpeech readers, small enough for two CPU cores.

OpenSLR resource 31 (CC BY 4.0) is the subset Kaldi's `mini_librispeech`
recipe trains on: `train-clean-5` (1,519 utterances, 28 readers of
train-clean-100, 5.3 h) and `dev-clean-2` (1,089 utterances, 40 readers of
dev-clean, 3.2 h), FLAC 16 kHz in LibriSpeech's layout.

    t2t-lite-datagen --problem=mini_librispeech --data_dir=$DATA --tmp_dir=$RAW

Splits, decided by what `$RAW` holds (an extracted tree or the tarball, as
for `librispeech`):

- with `dev-clean-2` (or when nothing is there: both tarballs are
  downloaded), test is dev-clean-2, as in Kaldi's recipe;
- with `train-clean-5` alone, test is six of its readers, fixed:
  `TEST_SPEAKERS` (118, 1867, 3242 male; 3526, 19, 4640 female; about 62
  minutes).

Either way dev is two more readers of train-clean-5 (`DEV_SPEAKERS`: 6848
male, 1970 female; about 18 minutes), so that decode weights are tuned on
voices that are neither trained on nor tested, and train is the rest of
train-clean-5. No reader is in two splits. The choice is written beside the
shards (`<problem>-test-source.txt`); regenerating part of the data with
another choice is refused, because the train split of one choice holds the
test readers of the other.

Unlike `librispeech` (T2T's upper case), transcripts are lower-cased: the
alphabet of `speechocean762` and the built-in corpus, which this corpus is
mixed with (`real_speech_mix`). Records carry the reader's id and gender
(`SPEAKERS.TXT`; LibriSpeech gives no ages), so the decoder reports the
spread over readers. Train is written in a seeded shuffled order (the tree
lists it reader by reader). tfds has no Mini LibriSpeech: only the tree,
the tarballs or a download (env `T2T_LITE_MINI_LIBRISPEECH_URL` names a
mirror).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

from t2t_lite import registry
from t2t_lite.data import librispeech_reader
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, DatagenReport, SplitReport
from t2t_lite.data.speech_problem import Speaker, Utterance
from t2t_lite.data.utterance_files import UtteranceFile, read_utterance_files
from t2t_lite.problems.librispeech import Librispeech

OPENSLR_URL = "https://www.openslr.org/resources/31"
URL_ENV = "T2T_LITE_MINI_LIBRISPEECH_URL"

TRAIN_SUBSET = "train-clean-5"
TEST_SUBSET = "dev-clean-2"
# The fixed split of train-clean-5 by reader (three men, three women held out
# for test; a man and a woman for dev).
TEST_SPEAKERS = ("118", "1867", "3242", "3526", "19", "4640")
DEV_SPEAKERS = ("6848", "1970")

# Where the test split comes from (`MiniLibrispeech.test_source`).
TEST_FROM_DEV_CLEAN_2 = TEST_SUBSET
TEST_FROM_SPEAKERS = "speakers"

TRAIN_ORDER_SEED = 31


def _present(tmp_dir: str, subset: str) -> bool:
    """Whether `subset` is in `tmp_dir` as an extracted tree or OpenSLR's tarball."""
    tarball = os.path.join(tmp_dir, f"{subset}.tar.gz")
    return bool(librispeech_reader.find_subset_dir(tmp_dir, subset)) or os.path.exists(tarball)


@registry.register_problem
class MiniLibrispeech(Librispeech):
    """Mini LibriSpeech (see the module docstring); byte targets, lower case.

    Class attributes (besides `librispeech`'s):
        test_speakers / dev_speakers: the readers of train-clean-5 held out.

    Example:
        t2t-lite-datagen --problem=mini_librispeech --data_dir=$DATA --tmp_dir=$RAW
    """

    subsets = {TRAIN: (TRAIN_SUBSET,), EVAL: (TRAIN_SUBSET,), TEST: (TEST_SUBSET,)}
    num_shards = {TRAIN: 4, EVAL: 1, TEST: 1}
    openslr_url = OPENSLR_URL
    url_env = URL_ENV
    test_speakers: tuple[str, ...] = TEST_SPEAKERS
    dev_speakers: tuple[str, ...] = DEV_SPEAKERS

    def _tfds_enabled(self) -> bool:
        return False  # tfds has no Mini LibriSpeech

    def test_source(self, tmp_dir: str) -> str:
        """`TEST_FROM_DEV_CLEAN_2`, or `TEST_FROM_SPEAKERS` when `tmp_dir` holds
        train-clean-5 without dev-clean-2. Decided once per `tmp_dir` (a
        download of train-clean-5 for one split must not change it for the next)."""
        decided = self.__dict__.setdefault("_test_sources", {})
        if tmp_dir not in decided:
            alone = not _present(tmp_dir, TEST_SUBSET) and _present(tmp_dir, TRAIN_SUBSET)
            decided[tmp_dir] = TEST_FROM_SPEAKERS if alone else TEST_FROM_DEV_CLEAN_2
        return decided[tmp_dir]

    def _source_path(self, data_dir: str) -> str:
        return os.path.join(data_dir, f"{self.name}-test-source.txt")

    def generate_data(self, data_dir: str, tmp_dir: str, overwrite: bool = False) -> DatagenReport:
        self.__dict__.pop("_test_sources", None)  # what tmp_dir holds now
        source = self.test_source(tmp_dir)
        path = self._source_path(data_dir)
        written = open(path, encoding="utf-8").read().strip() if os.path.exists(path) else None
        if written not in (None, source) and not overwrite:
            raise DataError(
                f"{self.name}: the shards in {data_dir} were written with test from "
                f"{written!r}, but {tmp_dir} now gives test from {source!r} (one's train "
                "holds the other's test readers); run again with --overwrite."
            )
        report = super().generate_data(data_dir, tmp_dir, overwrite)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source + "\n")
        return report

    def written_form(self, transcript: str) -> str:
        """Lower case: the alphabet of the corpora this one is mixed with."""
        return transcript.lower()

    def split_files(self, tmp_dir: str, split: str, report: SplitReport) -> list[UtteranceFile]:
        """The split's utterances with their readers, in writing order, without audio.

        Raises:
            DataError: a subset is nowhere to be found or downloaded.
        """
        if split == TEST and self.test_source(tmp_dir) == TEST_FROM_DEV_CLEAN_2:
            subset, keep = TEST_SUBSET, None
        else:
            held_out = set(self.dev_speakers)
            if self.test_source(tmp_dir) == TEST_FROM_SPEAKERS:
                held_out |= set(self.test_speakers)
            subset = TRAIN_SUBSET
            keep = {
                TRAIN: lambda speaker: speaker not in held_out,
                EVAL: lambda speaker: speaker in self.dev_speakers,
                TEST: lambda speaker: speaker in self.test_speakers,
            }[split]
        self.locate_subset(subset, tmp_dir)
        speakers = librispeech_reader.read_speakers(tmp_dir)
        files = []
        for utterance_id, path, transcript in librispeech_reader.list_utterances(
            tmp_dir, [subset], report
        ):
            speaker_id = librispeech_reader.speaker_id_of(utterance_id)
            if keep is None or keep(speaker_id):
                speaker = speakers.get(speaker_id) or Speaker(speaker_id)
                files.append(
                    UtteranceFile(utterance_id, path, self.written_form(transcript), speaker)
                )
        if split == TRAIN:
            random.Random(TRAIN_ORDER_SEED).shuffle(files)
        return files

    def utterances(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[Utterance]:
        del data_dir
        files = self.split_files(tmp_dir, split, report)
        yield from read_utterance_files(files, report, f"{self.name} {split}", self.workers)

    def transcripts(self, tmp_dir: str, split: str) -> Iterator[str]:
        for item in self.split_files(tmp_dir, split, SplitReport()):
            yield item.transcript
