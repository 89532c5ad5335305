"""Tests for t2t_lite.data.spoken_synth.grammar: the sentences of the spoken corpus."""

from __future__ import annotations

import random
import re

from t2t_lite.data.spoken_synth import grammar as spoken_grammar


def test_vocabulary_is_large_lower_case_and_free_of_homophones():
    words = spoken_grammar.vocabulary()
    assert len(words) >= 100
    assert all(re.fullmatch(r"[a-z]+", word) for word in words)
    homophones = [
        {"two", "to", "too"}, {"four", "for"}, {"eight", "ate"}, {"one", "won"},
        {"right", "write"}, {"new", "knew"}, {"there", "their"}, {"hours", "ours"},
        {"red", "read"}, {"blue", "blew"}, {"no", "know"}, {"hole", "whole"},
    ]  # fmt: skip
    for group in homophones:
        assert len(group & set(words)) <= 1, group


def test_sentences_have_2_to_12_vocabulary_words_and_single_spaces():
    rng = random.Random(7)
    vocabulary = set(spoken_grammar.vocabulary())
    sentences = [spoken_grammar.make_sentence(rng) for _ in range(3000)]
    for sentence in sentences:
        words = sentence.split(" ")
        assert 2 <= len(words) <= 12, sentence
        assert set(words) <= vocabulary, sentence
        assert sentence == sentence.strip().lower()
    lengths = {len(sentence.split()) for sentence in sentences}
    assert min(lengths) == 2 and max(lengths) == 12
    # The grammar uses most of its words, not a few favourites.
    used = {word for sentence in sentences for word in sentence.split()}
    assert len(used) >= 0.95 * len(vocabulary)
