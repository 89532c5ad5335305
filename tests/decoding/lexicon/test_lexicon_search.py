"""The lexicon search: words from phoneme posteriors through pronunciations and the n-gram."""

import numpy as np
import pytest

from t2t_lite.data.phoneme_ctc_hparams import PHONEME_VOCAB_SIZE, phoneme_id
from t2t_lite.data.reserved_ids import PAD_ID
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.lexicon.lexicon_search import LexiconSearchConfig, lexicon_search
from t2t_lite.decoding.lexicon.pronunciation_trie import ROOT, PronunciationTrie, word_keys
from t2t_lite.decoding.lexicon.word_lm import WordLm
from t2t_lite.ngram import word_hash
from t2t_lite.ngram.kneser_ney import build_kneser_ney
from t2t_lite.ngram.sentence_words import word_stream

ENCODER = ByteTextEncoder()
TEXT = ["the cat sat on the mat", "the dog sat on the mat", "a cat and a dog", "the cat ran"]


def sounds(*phonemes: str) -> tuple[int, ...]:
    return tuple(phoneme_id(p) for p in phonemes)


LEXICON = {
    "the": sounds("DH", "AH"),
    "a": sounds("AH"),
    "cat": sounds("K", "AE", "T"),
    "kat": sounds("K", "AE", "T"),  # a homophone the n-gram never saw
    "sat": sounds("S", "AE", "T"),
    "mat": sounds("M", "AE", "T"),
    "on": sounds("AA", "N"),
    "dog": sounds("D", "AO", "G"),
}


@pytest.fixture(scope="module")
def lm():
    ids = [ENCODER.encode(s) for s in TEXT]
    space = ENCODER.encode(" ")[0]
    stream, vocabulary = word_stream(np.concatenate(ids), np.array([len(i) for i in ids]), space, 3)
    return WordLm(build_kneser_ney(stream, 3, vocabulary))


@pytest.fixture(scope="module")
def trie(lm):
    return PronunciationTrie.of(LEXICON, lm.unigram)


def posteriors(*labels: str, peak: float = 0.9) -> np.ndarray:
    """One frame per label ("-" is blank), `peak` on it, the rest spread evenly."""
    rest = (1.0 - peak) / (PHONEME_VOCAB_SIZE - 1)
    frames = np.full([len(labels), PHONEME_VOCAB_SIZE], rest)
    for row, label in enumerate(labels):
        frames[row, PAD_ID if label == "-" else phoneme_id(label)] = peak
    return np.log(frames)


def sentence_log_prob(lm, words: list[str]) -> float:
    history, total = lm.start, 0.0
    for key in [*word_keys(words).tolist(), int(word_hash.EOS_WORD)]:
        total += lm.log_probs([(history, key)])[0]
        history = lm.after(history, key)
    return total


def test_word_keys_are_the_ngrams_byte_word_hashes():
    ids = [np.array([i]) for i in ENCODER.encode("cat")]
    assert word_keys(["cat"])[0] == word_hash.chain_np(word_hash.WORD_SEED, ids)[0]


def test_the_tree_shares_prefixes_and_keeps_homophones_together(trie, lm):
    k = trie.children[ROOT][phoneme_id("K")]
    cat_node = trie.children[trie.children[k][phoneme_id("AE")]][phoneme_id("T")]
    assert sorted(trie.spellings[i] for i in trie.words[cat_node]) == ["cat", "kat"]
    # "the" and "a" end on different nodes; "a" at the root's AH child
    assert [trie.spellings[i] for i in trie.words[trie.children[ROOT][phoneme_id("AH")]]] == ["a"]
    # the lookahead under K is the better of cat's and kat's unigram
    assert trie.smear[k] == pytest.approx(max(lm.unigram(word_keys(["cat", "kat"]))))
    assert trie.smear[ROOT] == 0.0


def test_the_search_reads_words_and_scores_path_plus_weighted_ngram(trie, lm):
    frames = posteriors("DH", "AH", "-", "K", "AE", "T", "-", "S", "AE", "AE", "T", "-")
    config = LexiconSearchConfig(lm_weight=0.5, word_bonus=1.5)
    best = lexicon_search(frames, trie, lm, config)[0]
    assert best.text == "the cat sat"  # not "the kat sat": the n-gram never saw "kat"
    path = float(np.sum(np.max(frames, axis=1)))
    expected = path + 0.5 * sentence_log_prob(lm, ["the", "cat", "sat"]) + 1.5 * 3
    assert best.score == pytest.approx(expected, abs=1e-6)


def test_a_repeated_sound_is_two_words_only_across_a_blank(trie, lm):
    config = LexiconSearchConfig(lm_weight=0.1)
    merged = lexicon_search(posteriors("DH", "AH", "AH"), trie, lm, config)[0]
    assert merged.text == "the"
    split = lexicon_search(posteriors("DH", "AH", "-", "AH"), trie, lm, config)[0]
    assert split.text == "the a"


def test_no_frames_is_one_empty_transcript_and_num_best_differ(trie, lm):
    empty = lexicon_search(np.zeros([0, PHONEME_VOCAB_SIZE]), trie, lm, LexiconSearchConfig())
    assert [h.words for h in empty] == [()]
    beams = lexicon_search(
        posteriors("K", "AE", "T"), trie, lm, LexiconSearchConfig(lm_weight=0.1), num_best=3
    )
    assert [h.text for h in beams][:2] == ["cat", "kat"]
    assert beams[0].score > beams[1].score
    assert len({h.text for h in beams}) == len(beams)
