"""Sentences of target ids as a stream of word hashes, the n-gram counter's input.

A word is a run of ids between spaces (the vocabulary's space id), hashed as
the search hashes it (`word_hash`). Only byte or character vocabularies spell
words this way; a subword vocabulary marks word starts inside its pieces.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from t2t_lite.ngram import word_hash


def word_stream(
    ids: np.ndarray, sentence_lengths: np.ndarray, space_id: int, order: int
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The word hashes of every sentence, and each distinct word's ids.

    Args:
        ids: int64, the sentences' target ids one after another (no EOS).
        sentence_lengths: each sentence's number of ids (0: skipped).
        space_id: the id that separates words.
        order: the n-gram order (each sentence starts with `order - 1` BOS words).

    Returns:
        `(stream, vocabulary)`: int64 `[order - 1 BOS, words..., EOS]` per
        sentence with a word, and `{word hash: its ids}`.
    """
    ids = np.asarray(ids, np.int64)
    sentence_of = np.repeat(np.arange(len(sentence_lengths)), sentence_lengths)
    starts = np.concatenate([[0], np.cumsum(sentence_lengths)[:-1]])
    is_letter = ids != space_id
    # A word starts at a letter after a space or at a sentence's start.
    previous_letter = np.concatenate([[False], is_letter[:-1]])
    first_of_sentence = np.zeros(len(ids), bool)
    first_of_sentence[starts[sentence_lengths > 0]] = True
    begins = is_letter & (~previous_letter | first_of_sentence)
    word_of = np.cumsum(begins) - 1  # each letter's word
    letters = np.nonzero(is_letter)[0]
    word_of_letter = word_of[letters]
    word_starts = np.nonzero(begins)[0]
    depth = letters - word_starts[word_of_letter]  # position inside the word
    hashes = np.full(len(word_starts), word_hash.WORD_SEED, np.int64)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(depth.max() + 2 if len(depth) else 1))
    for d in range(len(bounds) - 1):
        at = by_depth[bounds[d] : bounds[d + 1]]
        words = word_of_letter[at]
        hashes[words] = word_hash.extend_np(hashes[words], ids[letters[at]])
    word_sentence = sentence_of[word_starts]
    words_per_sentence = np.bincount(word_sentence, minlength=len(sentence_lengths))
    spoken = words_per_sentence > 0
    # Each sentence with words: order - 1 BOS, its words, EOS.
    slots = np.where(spoken, words_per_sentence + order, 0)
    stream = np.full(int(slots.sum()), word_hash.BOS_WORD, np.int64)
    offsets = np.concatenate([[0], np.cumsum(slots)[:-1]])
    rank = (
        np.arange(len(word_starts))
        - np.concatenate([[0], np.cumsum(words_per_sentence)[:-1]])[word_sentence]
    )
    stream[offsets[word_sentence] + order - 1 + rank] = hashes
    stream[(offsets + slots - 1)[spoken]] = word_hash.EOS_WORD
    distinct, first = np.unique(hashes, return_index=True)
    lengths = np.bincount(word_of_letter, minlength=len(word_starts))
    vocabulary = {
        word: ids[word_starts[index] : word_starts[index] + lengths[index]]
        for word, index in zip(distinct.tolist(), first.tolist(), strict=True)
    }
    return stream, vocabulary


def chunked_word_stream(
    chunks: Iterable[tuple[np.ndarray, np.ndarray]], space_id: int, order: int
) -> tuple[np.ndarray, dict[int, np.ndarray], int]:
    """`word_stream` of `(ids, sentence_lengths)` chunks of whole sentences.

    Only one chunk's ids are in memory at a time (the counting of a whole
    corpus's ids at once takes tens of bytes per byte of text), and a
    chunk's stream of words is about a fifth of its ids.

    Returns:
        `(stream, vocabulary, sentences)`: as `word_stream`'s, over every
        chunk in order, and how many sentences had a word.
    """
    streams, vocabulary, sentences = [], {}, 0
    for ids, lengths in chunks:
        stream, words = word_stream(ids, lengths, space_id, order)
        streams.append(stream)
        sentences += int(np.count_nonzero(stream == word_hash.EOS_WORD))
        for word, spelled in words.items():
            vocabulary.setdefault(word, spelled)
    stream = np.concatenate(streams) if streams else np.zeros(0, np.int64)
    return stream, vocabulary, sentences
