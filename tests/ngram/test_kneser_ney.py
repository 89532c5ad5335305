"""The word n-gram: hashes agree in numpy and TF, Kneser-Ney's numbers, its tables on disk."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.ngram import word_hash
from t2t_lite.ngram.kneser_ney import build_kneser_ney
from t2t_lite.ngram.ngram_tables import NgramTables, has_ngram
from t2t_lite.ngram.sentence_words import chunked_word_stream, word_stream

ENCODER = ByteTextEncoder()
SPACE_ID = ENCODER.encode(" ")[0]
TEXT = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a cat and a dog",
    "the cat ran",
    "san francisco",
    "san francisco is far",
]


def counted(sentences, order, prune=1):
    """`(tables, vocabulary)` of `sentences` as t2t-lite-ngram counts them."""
    ids = [ENCODER.encode(s) for s in sentences]
    stream, vocabulary = word_stream(
        np.concatenate(ids), np.array([len(i) for i in ids]), SPACE_ID, order
    )
    return build_kneser_ney(stream, order, vocabulary, prune=prune), vocabulary


def word(text: str) -> int:
    return int(
        word_hash.chain_np(word_hash.WORD_SEED, [np.array([i]) for i in ENCODER.encode(text)])[0]
    )


def history(order: int, *words: str) -> np.ndarray:
    hashes = [int(word_hash.BOS_WORD)] * (order - 1) + [word(w) for w in words]
    return np.array(hashes[len(hashes) - (order - 1) :], np.int64)


def test_numpy_and_tensorflow_hash_alike():
    rng = np.random.default_rng(0)
    hashes = rng.integers(-(2**63), 2**63 - 1, size=500, dtype=np.int64)
    ids = rng.integers(0, 258, size=500)
    np.testing.assert_array_equal(
        word_hash.extend_tf(tf.constant(hashes), tf.constant(ids)).numpy(),
        word_hash.extend_np(hashes, ids),
    )
    columns = [hashes, hashes[::-1].copy()]
    np.testing.assert_array_equal(
        word_hash.chain_tf(word_hash.ngram_seed(2), [tf.constant(c) for c in columns]).numpy(),
        word_hash.chain_np(word_hash.ngram_seed(2), columns),
    )


def test_the_stream_is_each_sentence_after_bos_words_then_eos():
    stream, vocabulary = word_stream(
        np.array(ENCODER.encode("ab c") + ENCODER.encode("c")), np.array([4, 0, 1]), SPACE_ID, 3
    )
    bos, eos = word_hash.BOS_WORD, word_hash.EOS_WORD
    np.testing.assert_array_equal(
        stream, [bos, bos, word("ab"), word("c"), eos, bos, bos, word("c"), eos]
    )
    assert {k: v.tolist() for k, v in vocabulary.items()} == {
        word("ab"): ENCODER.encode("ab"),
        word("c"): ENCODER.encode("c"),
    }


@pytest.mark.parametrize("order", [2, 3, 4])
def test_every_context_gives_a_distribution(order):
    """Over the vocabulary and EOS, P(w | h) sums to 1 whatever the history,
    seen or not, and the uniform floor leaves an unknown word a little."""
    tables, vocabulary = counted(TEXT, order)
    words = np.array([*vocabulary, word_hash.EOS_WORD], np.int64)
    for context in [(), ("the",), ("on", "the"), ("sat", "on", "the"), ("zebra", "qua")]:
        probs = np.exp(tables.log_prob(np.tile(history(order, *context), (len(words), 1)), words))
        assert probs.sum() == pytest.approx(1.0, abs=1e-3), context
    assert -30 < tables.oov_log_prob < np.log(1 / len(words))


def test_a_corpus_read_in_chunks_gives_the_stream_read_whole():
    ids = [ENCODER.encode(s) for s in TEXT]
    whole, vocabulary = word_stream(
        np.concatenate(ids), np.array([len(i) for i in ids]), SPACE_ID, 3
    )
    chunks = [
        (np.concatenate(ids[a:b]), np.array([len(i) for i in ids[a:b]]))
        for a, b in [(0, 2), (2, 5), (5, 6)]
    ]
    stream, chunked, sentences = chunked_word_stream(chunks, SPACE_ID, 3)
    np.testing.assert_array_equal(stream, whole)
    assert sentences == len(TEXT)
    assert {k: v.tolist() for k, v in chunked.items()} == {
        k: v.tolist() for k, v in vocabulary.items()
    }


def test_kneser_ney_numbers_by_hand():
    """A bigram model of two sentences, worked by hand (one discount per order
    from the counts of counts; continuation counts for the unigrams)."""
    tables, _ = counted(["a b", "a c"], 2)
    # Bigrams: <s> a (2), a b, b </s>, a c, c </s> (1 each): n1 = 4, n2 = 1.
    d2 = 4 / (4 + 2 * 1)
    # Unigram continuation counts: a 1 (after <s>), b 1, c 1, </s> 2: n1 = 3, n2 = 1.
    d1 = 3 / (3 + 2 * 1)
    vocabulary = 4  # a, b, c and </s>
    uniform = 1 / vocabulary
    p1_b = (1 - d1) / 5 + d1 * 4 / 5 * uniform
    p2_b_after_a = (1 - d2) / 2 + d2 * 2 / 2 * p1_b
    got = np.exp(tables.log_prob(history(2, "a")[None], np.array([word("b")])))[0]
    assert got == pytest.approx(p2_b_after_a, rel=1e-5)
    # An unseen history backs off to the unigram with weight 1.
    got = np.exp(tables.log_prob(history(2, "zebra")[None], np.array([word("b")])))[0]
    assert got == pytest.approx(p1_b, rel=1e-5)
    p1_eos = (2 - d1) / 5 + d1 * 4 / 5 * uniform
    got = np.exp(tables.log_prob(history(2, "b")[None], np.array([word_hash.EOS_WORD])))[0]
    assert got == pytest.approx((1 - d2) / 1 + d2 * 1 / 1 * p1_eos, rel=1e-5)


def test_pruning_drops_rare_long_ngrams_and_keeps_the_short():
    full, _ = counted(TEXT, 3)
    pruned, _ = counted(TEXT, 3, prune=2)
    assert pruned.info["ngrams"]["1"] == full.info["ngrams"]["1"]
    assert pruned.info["ngrams"]["2"] == full.info["ngrams"]["2"]
    assert 0 < pruned.info["ngrams"]["3"] < full.info["ngrams"]["3"]
    # "<s> san francisco" twice: kept, its probability as in the full model.
    kept = pruned.log_prob(history(3, "san")[None], np.array([word("francisco")]))
    assert kept == pytest.approx(
        full.log_prob(history(3, "san")[None], np.array([word("francisco")]))
    )


def test_lookahead_is_the_unigram_mass_under_each_prefix():
    tables, vocabulary = counted(TEXT, 2)
    unigram = {
        w: np.exp(tables.log_prob(history(2, "zebra")[None], np.array([w]))[0]) for w in vocabulary
    }
    prefix = word_hash.chain_np(word_hash.WORD_SEED, [np.array([i]) for i in ENCODER.encode("s")])
    _, mass = tables.lookahead.get(prefix, -np.inf)
    expected = unigram[word("sat")] + unigram[word("san")]
    assert np.exp(mass[0]) == pytest.approx(expected, rel=1e-5)


def test_tables_round_trip_through_their_files(tmp_path):
    tables, vocabulary = counted(TEXT, 3)
    tables.info.update(space_id=SPACE_ID, target_vocab_size=ENCODER.vocab_size)
    assert not has_ngram(str(tmp_path))
    tables.save(str(tmp_path))
    assert has_ngram(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ngram.json", "ngram.npz"]
    loaded = NgramTables.load(str(tmp_path))
    words = np.array(list(vocabulary), np.int64)
    histories = np.tile(history(3, "the", "cat"), (len(words), 1))
    np.testing.assert_array_equal(
        loaded.log_prob(histories, words), tables.log_prob(histories, words)
    )
    assert loaded.info["space_id"] == SPACE_ID and loaded.order == 3
    np.testing.assert_array_equal(loaded.context_lookahead.keys, tables.context_lookahead.keys)
    np.testing.assert_array_equal(loaded.context_lookahead.values, tables.context_lookahead.values)


def test_tables_without_the_context_lookahead_are_refused_in_one_sentence(tmp_path):
    tables, _ = counted(TEXT, 2)
    tables.save(str(tmp_path))
    arrays = dict(np.load(tmp_path / "ngram.npz"))
    np.savez(tmp_path / "ngram.npz", **{k: v for k, v in arrays.items() if "context" not in k})
    with pytest.raises(ValueError, match="has no context_lookahead table .* run t2t-lite-ngram"):
        NgramTables.load(str(tmp_path))
