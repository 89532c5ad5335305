"""WMT English -> German translation: T2T's `translate_ende_wmt32k`.

    split   tfds `wmt14_translate/de-en` split   what it holds
    train   train                                Europarl v7, Common Crawl, News Commentary v9
    dev     validation                           newstest2013 (T2T's dev set)
    test    test                                 newstest2014 (the paper's test set)

tfds's wmt14 validation split lists newsdev2014 and newstest2013, but
newsdev2014 exists only for Hindi, so for de-en it is newstest2013 alone.
Unlike T2T: its training data used News Commentary v12/v13, tfds's wmt14
uses v9 (set `tfds_name = "wmt_t2t_translate/de-en"` for T2T's exact
corpora), and T2T had no test split.

The text comes only from tfds: the builder downloads about 1.7 GB from
statmt.org into its `downloads/` directory and prepares the splits the
first time (`tfds_data_dir`, default tfds's own: `$TFDS_DATA_DIR` or
~/tensorflow_datasets); later runs read the prepared copy. `tmp_dir` is
tfds's manual directory: an archive downloaded by hand into it (under the
name its URL ends with) is used instead of downloading it. Offline, datagen
fails within seconds with one line naming the URL (see
`t2t_lite.data.download.tfds_download_and_prepare`).

Inputs and targets share one SentencePiece vocabulary (unigram, T2T's
"32k" = 2**15 pieces; pad 0, EOS 1, unk 2), trained during datagen on the
first `vocab_sample_sentences` sentences (both languages) of the training
split and saved in `data_dir` as `vocab.translate_ende_wmt32k.32768.model`;
an existing one is kept (delete it to retrain). tfds shuffles a split's
examples when it prepares it, so the first sentences are a uniform sample
of all three training corpora.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

from t2t_lite import registry
from t2t_lite.data.download import tfds_download_and_prepare
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.data.text_encoders import SentencePieceEncoder, TextEncoder, train_sentencepiece
from t2t_lite.data.text_problems import Text2TextProblem

# Our split -> tfds's split.
TFDS_SPLITS = {TRAIN: "train", EVAL: "validation", TEST: "test"}

# From tfds's checksums of the archives wmt14_translate/de-en downloads.
DOWNLOAD_GB = 1.7


def normalize_whitespace(text: str) -> str:
    """Collapses runs of whitespace and strips the ends.

    SentencePiece does the same when it encodes, so this is the text that
    decoding the stored ids gives back (what BLEU references are made of).
    """
    return " ".join(text.split())


@registry.register_problem
class TranslateEndeWmt32k(Text2TextProblem):
    """WMT14 English -> German with a shared 32k SentencePiece vocabulary.

    See the module docstring for the splits and the vocabulary.

    Class attributes:
        tfds_name: the tfds builder (and config) the text comes from.
        tfds_data_dir: tfds's data_dir; None means tfds's default
            (`$TFDS_DATA_DIR`, else ~/tensorflow_datasets).
        source_language, target_language: the tfds feature names of the
            input and target text.
        vocab_size: SentencePiece pieces (an upper bound: a small corpus
            yields fewer).
        vocab_sample_sentences: at most this many sentences (English and
            German together) train the vocabulary.

    Example:
        t2t-lite-datagen --problem=translate_ende_wmt32k --data_dir=$DATA --tmp_dir=$RAW
    """

    tfds_name: str = "wmt14_translate/de-en"
    tfds_data_dir: str | None = None
    source_language: str = "en"
    target_language: str = "de"
    vocab_size: int = 2**15  # T2T's approx_vocab_size for "32k"
    vocab_sample_sentences: int = 1_000_000
    num_shards = {TRAIN: 100, EVAL: 1, TEST: 1}  # T2T's numbers
    # T2T's translate problems add (approximate) BLEU to the default metrics;
    # here "bleu" is sacrebleu's, on real decodes (see decoding/evaluation/scoring.py).
    eval_metrics = ("accuracy", "accuracy_per_sequence", "neg_log_perplexity", "bleu")

    @property
    def vocab_filename(self) -> str:
        return f"vocab.{self.name}.{self.vocab_size}.model"

    # -- raw text -----------------------------------------------------------------------

    def _tfds_builder(self, tmp_dir: str | None = None):
        """The prepared tfds builder (downloading and preparing it on first use).

        Args:
            tmp_dir: tfds's manual directory (archives downloaded by hand), or None.

        Raises:
            DataError: tfds is missing, or could not download or prepare the data.
        """
        try:
            # Imported here: only datagen needs it, and it is slow to import.
            import tensorflow_datasets as tfds
        except ImportError as error:
            raise DataError(
                f"{self.name} reads WMT from tensorflow-datasets, which is not "
                "installed: pip install tensorflow-datasets, then run again."
            ) from error
        where = self.tfds_data_dir or "tfds's data_dir ($TFDS_DATA_DIR or ~/tensorflow_datasets)"
        try:
            builder = tfds.builder(self.tfds_name, data_dir=self.tfds_data_dir)
            tfds_download_and_prepare(builder, manual_dir=tmp_dir)
        except DataError:
            raise  # a URL that cannot be reached: the message names it
        except ModuleNotFoundError as error:  # tfds imports some modules lazily
            raise DataError(
                f"{self.name}: tensorflow-datasets needs the module {error.name!r}, which "
                f"is not installed: pip install {error.name}, then run again."
            ) from error
        except Exception as error:  # network, disk and tfds errors all end up here
            # tfds' messages span lines (a checksum mismatch lists both); one line here.
            reason = " ".join(str(error).split())
            raise DataError(
                f"{self.name}: tfds could not provide {self.tfds_name} in {where} "
                f"({type(error).__name__}: {reason}). The builder downloads about "
                f"{DOWNLOAD_GB} GB from statmt.org and prepares it on first use: check "
                "the network and the free disk space there, or prepare it where there "
                "is network and point tfds_data_dir (or $TFDS_DATA_DIR) at that copy, "
                "then run again."
            ) from error
        return builder

    def text_pairs(self, split: str, tmp_dir: str | None = None) -> Iterator[tuple[str, str]]:
        """(source, target) sentences of `split` in tfds's order, whitespace normalized."""
        import tensorflow_datasets as tfds

        builder = self._tfds_builder(tmp_dir)
        # tfds shuffled the examples when it prepared the split; reading its
        # files in order keeps datagen repeatable.
        dataset = builder.as_dataset(split=TFDS_SPLITS[split], shuffle_files=False)
        for example in tfds.as_numpy(dataset):
            yield (
                normalize_whitespace(example[self.source_language].decode("utf-8")),
                normalize_whitespace(example[self.target_language].decode("utf-8")),
            )

    def vocab_texts(self, tmp_dir: str | None = None) -> Iterator[str]:
        """The vocabulary's training text: the first `vocab_sample_sentences`
        non-empty sentences of the training split, both languages interleaved."""
        pairs = self.text_pairs(TRAIN, tmp_dir)
        sentences = (sentence for pair in pairs for sentence in pair if sentence)
        return itertools.islice(sentences, self.vocab_sample_sentences)

    # -- Text2TextProblem -------------------------------------------------------------------

    def prepare_data(self, data_dir: str, tmp_dir: str) -> None:
        """Trains the shared SentencePiece vocabulary unless `data_dir` has it."""
        path = self.vocab_path(data_dir, self.vocab_filename)
        if os.path.exists(path):
            return
        texts = self.vocab_texts(tmp_dir)
        first = next(texts, None)
        if first is None:
            raise DataError(
                f"{self.name}: the train split of {self.tfds_name} has no text to train "
                "the SentencePiece vocabulary on; delete the prepared copy in tfds's "
                "data_dir so tfds prepares it again, then run again."
            )
        # A generator, not a list: a million sentences need not sit in memory.
        train_sentencepiece(itertools.chain([first], texts), path, self.vocab_size)

    def generate_text_pairs(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[dict]:
        del data_dir  # the text comes from tfds
        # Empty sentences are skipped and counted by Text2TextProblem.
        for source, target in self.text_pairs(split, tmp_dir):
            yield {"inputs": source, "targets": target}

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        # One vocabulary for both sides, as in T2T (its models may then share
        # the input and target embeddings).
        encoder = SentencePieceEncoder(self.vocab_path(data_dir, self.vocab_filename))
        return {"inputs": encoder, "targets": encoder}
