"""LibriSpeech speech recognition problems, with Tensor2Tensor's names and splits.

    problem                            train                       dev / test
    librispeech (960 h)                train-clean-100, -360,      dev-clean + dev-other /
                                       train-other-500             test-clean + test-other
    librispeech_clean_small (100 h)    train-clean-100             dev-clean / test-clean
    librispeech_clean (460 h)          train-clean-100, -360       dev-clean / test-clean
    librispeech_noisy (500 h)          train-other-500             dev-other / test-other
    librispeech_train_full_test_clean  as librispeech              dev-clean / test-clean
    librispeech_train_full_test_other  as librispeech              dev-other / test-other
    librispeech_sentencepiece          as librispeech, with SentencePiece targets

Raw data, per subset, first found wins:

1. an extracted tree `tmp_dir/LibriSpeech/<subset>/` (or `tmp_dir` may be
   the `LibriSpeech` directory itself);
2. OpenSLR's tarball `tmp_dir/<subset>.tar.gz`, extracted safely into `tmp_dir`;
3. with `use_tfds` (class attribute, or env `T2T_LITE_LIBRISPEECH_USE_TFDS=1`):
   the `librispeech` tfds builder in `tfds_data_dir` (default: tfds's own,
   `$TFDS_DATA_DIR` or ~/tensorflow_datasets). tfds prepares every subset
   at once (about 60 GB of downloads) the first time;
4. otherwise a download of `<base_url>/<subset>.tar.gz` into `tmp_dir`
   (resumable), then 2. `base_url` defaults to OpenSLR 12
   (`https://www.openslr.org/resources/12`); env `T2T_LITE_LIBRISPEECH_URL`
   sets a mirror (e.g. `https://us.openslr.org/resources/12`).

A subset found nowhere (the download failed) is one DataError naming what
to put where. Downloaded tarballs are kept, as in T2T.

As in T2T, transcripts stay as LibriSpeech writes them (upper case, no
punctuation; T2T does not lowercase) and targets are bytes. Unlike T2T:
the record is t2t-lite's (int16 PCM, transcript, utterance id; no speaker
id); downloads use https, resume and are size-checked, and tarballs are
extracted safely; `librispeech_train_full_test_*` can generate their own
shards (T2T's could only read `librispeech` + `librispeech_clean`/`_noisy`
shards) and still read those when their own are missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import numpy as np

from t2t_lite import registry
from t2t_lite.data import librispeech_reader, shards
from t2t_lite.data.audio_io import from_int16_pcm
from t2t_lite.data.download import download, tfds_download_and_prepare
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.safe_tar import safe_extract_tar
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.data.text_encoders import SentencePieceEncoder, TextEncoder, train_sentencepiece

OPENSLR_URL = "https://www.openslr.org/resources/12"
URL_ENV = "T2T_LITE_LIBRISPEECH_URL"
USE_TFDS_ENV = "T2T_LITE_LIBRISPEECH_USE_TFDS"

TRAIN_SUBSETS = ("train-clean-100", "train-clean-360", "train-other-500")
DEV_SUBSETS = ("dev-clean", "dev-other")
TEST_SUBSETS = ("test-clean", "test-other")

# Tarball sizes in bytes on OpenSLR (from tfds's librispeech checksums); checked
# only when downloading from OpenSLR itself, a mirror is trusted for its
# Content-Length.
OPENSLR_SIZES = {
    "dev-clean": 337926286,
    "dev-other": 314305928,
    "test-clean": 346663984,
    "test-other": 328757843,
    "train-clean-100": 6387309499,
    "train-clean-360": 23049477885,
    "train-other-500": 30593501606,
}

# tfds's split names for the subsets.
TFDS_SPLITS = {
    "dev-clean": "dev_clean",
    "dev-other": "dev_other",
    "test-clean": "test_clean",
    "test-other": "test_other",
    "train-clean-100": "train_clean100",
    "train-clean-360": "train_clean360",
    "train-other-500": "train_other500",
}

_TREE, _TFDS = "tree", "tfds"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


@registry.register_problem
class Librispeech(SpeechRecognitionProblem):
    """LibriSpeech 960 h: all training subsets, dev/test clean + other.

    Class attributes:
        subsets: split -> the LibriSpeech subsets it is made of, in order.
        openslr_url: the OpenSLR resource the tarballs come from.
        url_env: the env var naming a mirror of it.
        base_url: where the tarballs are downloaded from; None means the
            `url_env` env var (`T2T_LITE_LIBRISPEECH_URL`), else `openslr_url`.
        use_tfds: take subsets that are not in `tmp_dir` from tfds instead of
            downloading tarballs (also on with `T2T_LITE_LIBRISPEECH_USE_TFDS=1`).
        tfds_data_dir: tfds's data_dir; None means tfds's default.
        workers: audio-decoding threads; None means `os.cpu_count()`.

    Example:
        t2t-lite-datagen --problem=librispeech --data_dir=$DATA --tmp_dir=$RAW
    """

    subsets: dict[str, tuple[str, ...]] = {
        TRAIN: TRAIN_SUBSETS,
        EVAL: DEV_SUBSETS,
        TEST: TEST_SUBSETS,
    }
    num_shards = {TRAIN: 100, EVAL: 1, TEST: 1}  # T2T's numbers
    openslr_url: str = OPENSLR_URL
    url_env: str = URL_ENV
    base_url: str | None = None
    use_tfds: bool = False
    tfds_data_dir: str | None = None
    workers: int | None = None

    # -- raw data ---------------------------------------------------------------------

    def download_url(self, subset: str) -> str:
        base = self.base_url or os.environ.get(self.url_env) or self.openslr_url
        return f"{base.rstrip('/')}/{subset}.tar.gz"

    def _tfds_enabled(self) -> bool:
        return self.use_tfds or _env_flag(USE_TFDS_ENV)

    def _fetch_tarball(self, subset: str, tmp_dir: str) -> str:
        """Downloads `<subset>.tar.gz` into `tmp_dir` (resuming), returns its path."""
        url = self.download_url(subset)
        archive = os.path.join(tmp_dir, f"{subset}.tar.gz")
        expected = OPENSLR_SIZES.get(subset) if url.startswith(OPENSLR_URL) else None
        advice = (
            f"download {subset}.tar.gz from {self.openslr_url} into {tmp_dir} yourself, "
            f"or set {self.url_env} to a mirror, then run again"
        )
        return download(url, archive, expected_size=expected, advice=advice)

    def locate_subset(self, subset: str, tmp_dir: str) -> str:
        """Makes `subset` readable; returns how: "tree" (in tmp_dir) or "tfds".

        Follows the order in the module docstring: an extracted tree, a
        tarball, tfds when asked, else a download.

        Raises:
            DataError: the subset could not be obtained (the message says how
                to provide it), or its tarball lacks the subset.
        """
        if librispeech_reader.find_subset_dir(tmp_dir, subset):
            return _TREE
        archive = os.path.join(tmp_dir, f"{subset}.tar.gz")
        if not os.path.exists(archive):
            if self._tfds_enabled():
                return _TFDS
            self._fetch_tarball(subset, tmp_dir)
        safe_extract_tar(archive, tmp_dir)
        if not librispeech_reader.find_subset_dir(tmp_dir, subset):
            raise DataError(
                f"{archive} has no LibriSpeech/{subset}/ directory; it is not "
                f"OpenSLR's {subset}.tar.gz, replace it with that file."
            )
        return _TREE

    def _groups(self, tmp_dir: str, split: str) -> list[tuple[str, list[str]]]:
        """The split's subsets as runs of the same source, in order."""
        groups: list[tuple[str, list[str]]] = []
        for subset in self.subsets[split]:
            source = self.locate_subset(subset, tmp_dir)
            if groups and groups[-1][0] == source:
                groups[-1][1].append(subset)
            else:
                groups.append((source, [subset]))
        return groups

    def _tfds_builder(self):
        import tensorflow_datasets as tfds  # only this route needs it at import time

        builder = tfds.builder("librispeech", data_dir=self.tfds_data_dir)
        tfds_download_and_prepare(builder)  # offline: one line naming the URL, in seconds
        return builder

    def _tfds_utterances(self, subsets: Sequence[str], report: SplitReport) -> Iterator[Utterance]:
        """Utterances of `subsets` from tfds (int16 `speech`, `text`, `id`)."""
        import tensorflow_datasets as tfds

        builder = self._tfds_builder()
        for subset in subsets:
            dataset = builder.as_dataset(split=TFDS_SPLITS[subset], shuffle_files=False)
            for example in tfds.as_numpy(dataset):
                try:
                    transcript = example["text"].decode("utf-8")
                except UnicodeDecodeError:
                    report.skip(librispeech_reader.SKIP_NON_UTF8)
                    continue
                speech = np.asarray(example["speech"])
                if speech.ndim > 1:  # never in LibriSpeech, which is mono
                    speech = speech.mean(axis=-1).astype(np.int16)
                yield Utterance(
                    utterance_id=example["id"].decode("utf-8", errors="replace"),
                    waveform=from_int16_pcm(speech),
                    transcript=transcript,
                )

    def utterances(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[Utterance]:
        for source, subsets in self._groups(tmp_dir, split):
            if source == _TFDS:
                yield from self._tfds_utterances(subsets, report)
            else:
                yield from librispeech_reader.read_librispeech_tree(
                    tmp_dir, subsets, report, workers=self.workers
                )

    def written_form(self, transcript: str) -> str:
        """A transcript as this problem's targets write it (LibriSpeech's upper case)."""
        return transcript

    def transcripts(self, tmp_dir: str, split: str) -> Iterator[str]:
        """The split's transcripts, without decoding audio (for vocabularies)."""
        for source, subsets in self._groups(tmp_dir, split):
            if source == _TFDS:
                import tensorflow_datasets as tfds

                builder = self._tfds_builder()
                for subset in subsets:
                    dataset = builder.as_dataset(
                        split=TFDS_SPLITS[subset],
                        decoders={"speech": tfds.decode.SkipDecoding()},
                    )
                    for example in tfds.as_numpy(dataset):
                        yield example["text"].decode("utf-8", errors="replace")
            else:
                items = librispeech_reader.list_utterances(tmp_dir, subsets, SplitReport())
                for _, _, transcript in items:
                    yield transcript


@registry.register_problem
class LibrispeechCleanSmall(Librispeech):
    """100 h of clean training speech; clean dev and test."""

    subsets = {TRAIN: TRAIN_SUBSETS[:1], EVAL: DEV_SUBSETS[:1], TEST: TEST_SUBSETS[:1]}


@registry.register_problem
class LibrispeechClean(Librispeech):
    """460 h of clean training speech; clean dev and test."""

    subsets = {TRAIN: TRAIN_SUBSETS[:2], EVAL: DEV_SUBSETS[:1], TEST: TEST_SUBSETS[:1]}


@registry.register_problem
class LibrispeechNoisy(Librispeech):
    """500 h of "other" training speech; "other" dev and test."""

    subsets = {TRAIN: TRAIN_SUBSETS[2:], EVAL: DEV_SUBSETS[1:], TEST: TEST_SUBSETS[1:]}


class _TrainFullEvalSubset(Librispeech):
    """960 h training; dev/test from one condition.

    T2T's versions read `librispeech`'s train shards and another problem's
    dev/test shards and could not generate data themselves. These generate
    their own shards, and when theirs are missing read T2T's combination,
    so both workflows work.
    """

    shards_from: dict[str, str] = {}

    def require_data(self, data_dir: str, split: str) -> list[str]:
        if not shards.existing_shards(data_dir, self.name, split):
            shared = shards.existing_shards(data_dir, self.shards_from[split], split)
            if shared:
                shards.check_shards(shared)
                return shared
        return super().require_data(data_dir, split)


@registry.register_problem
class LibrispeechTrainFullTestClean(_TrainFullEvalSubset):
    """960 h training; clean dev and test."""

    subsets = {TRAIN: TRAIN_SUBSETS, EVAL: DEV_SUBSETS[:1], TEST: TEST_SUBSETS[:1]}
    shards_from = {TRAIN: "librispeech", EVAL: "librispeech_clean", TEST: "librispeech_clean"}


@registry.register_problem
class LibrispeechTrainFullTestOther(_TrainFullEvalSubset):
    """960 h training; "other" dev and test."""

    subsets = {TRAIN: TRAIN_SUBSETS, EVAL: DEV_SUBSETS[1:], TEST: TEST_SUBSETS[1:]}
    shards_from = {TRAIN: "librispeech", EVAL: "librispeech_noisy", TEST: "librispeech_noisy"}


@registry.register_problem
class LibrispeechSentencepiece(Librispeech):
    """`librispeech` with SentencePiece targets instead of bytes.

    The model (unigram, `vocab_size` pieces; pad 0, EOS 1, unk 2) is trained
    during datagen on the training transcripts and saved in `data_dir` as
    `vocab_filename`; an existing one is kept (delete it to retrain).

    Class attributes:
        vocab_size: SentencePiece pieces (an upper bound: a small corpus
            yields fewer).
    """

    vocab_size: int = 5000

    @property
    def vocab_filename(self) -> str:
        return f"vocab.{self.name}.{self.vocab_size}.model"

    def prepare_data(self, data_dir: str, tmp_dir: str) -> None:
        path = self.vocab_path(data_dir, self.vocab_filename)
        if os.path.exists(path):
            return
        texts = list(self.transcripts(tmp_dir, TRAIN))
        if not texts:
            raise DataError(
                f"{self.name}: no training transcript found in {tmp_dir} to train "
                "the SentencePiece vocabulary on; check the raw data there."
            )
        train_sentencepiece(texts, path, self.vocab_size)

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        return {"targets": SentencePieceEncoder(self.vocab_path(data_dir, self.vocab_filename))}
