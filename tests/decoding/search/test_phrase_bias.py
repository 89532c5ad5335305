"""Phrase biasing: bonuses only for phrases a hypothesis really spells, the
search changed only where a phrase matches, the list read from a file."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.text_encoders import EOS_ID, ByteTextEncoder, IntegerEncoder
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.beam_search import BeamSearch, scored_beam_search
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer
from t2t_lite.decoding.search.model_search import BatchDecoder, decode_cap, model_search
from t2t_lite.decoding.search.phrase_bias import (
    PhraseBiasScorer,
    PhraseListError,
    phrase_features,
    read_phrase_file,
)
from t2t_lite.decoding.search.ranking import INF
from t2t_lite.decoding.search.scorer import WeightedScorer
from tests.helpers import CTC_BEAM_DECODE
from tests.serving.runs import speech_features, tone_and_noise

BYTES = ByteTextEncoder()
VOCAB = BYTES.vocab_size
SURFACES = BYTES.token_surfaces()
PHRASES = [("cat", 1.0), ("new", 0.5), ("new york", 2.0)]


def spelled_bonus(phrases, tokens: list[int], surfaces=SURFACES) -> float:
    """The bonuses of the scorer summed along `tokens`, as the search sums
    them along a hypothesis."""
    features = phrase_features(phrases)
    scorer = PhraseBiasScorer(features["phrase_ids"], features["phrase_boosts"], 1, surfaces)
    state, total = scorer.initial_state(1), 0.0
    for step, token in enumerate(tokens):
        bonus, new_state = scorer.score(state, None, tf.constant(step))
        total += float(bonus[0, 0, token])
        chosen = tf.constant([[token]])
        state = scorer.select(state, new_state, tf.constant([[0]]), chosen, chosen)
    return total


def total_bonus(phrases, text: str, finish: bool = True) -> float:
    """`spelled_bonus` of `text` in bytes (then EOS)."""
    return spelled_bonus(phrases, BYTES.encode(text) + ([EOS_ID] if finish else []))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("the cat sat", 3 * 1.0),  # a whole word: its bonus stays
        ("cat", 3 * 1.0),  # completed by EOS
        ("the cap sat", 0.0),  # "ca" matched, then failed: taken back
        ("the cats sat", 0.0),  # "cat" inside a longer word
        ("bobcat", 0.0),  # not at a word start
        ("a cat and a cat", 6 * 1.0),  # each occurrence
        ("new york", 8 * 2.0),  # the longer phrase wins
        ("new yolk", 3 * 0.5),  # "new" kept when "new york" fails
        ("newt", 0.0),
        ("", 0.0),
    ],
)
def test_bonuses_sum_to_the_phrases_a_hypothesis_spells(text, expected):
    assert total_bonus(PHRASES, text) == pytest.approx(expected)


def test_a_running_match_is_worth_what_it_matched_until_it_fails():
    assert total_bonus(PHRASES, "the ca", finish=False) == pytest.approx(2.0)
    assert total_bonus(PHRASES, "the ca", finish=True) == pytest.approx(0.0)


def fixed_decoder(preferences: dict[str, float], seen: list | None = None):
    """A decoder scorer that spells the given texts, each token's log
    probability set so that a text's total is its preference; `seen`
    collects every hypothesis it is asked to extend."""
    table = np.full([64, VOCAB], -20.0, np.float32)  # one row per prefix
    prefixes = {(): 0}
    for text, total in preferences.items():
        tokens = BYTES.encode(text) + [EOS_ID]
        prefix = ()
        for token in tokens:
            row = prefixes[prefix]
            table[row, token] = total / len(tokens)
            prefix = prefix + (token,)
            prefixes.setdefault(prefix, len(prefixes))
    rows = {prefix: row for prefix, row in prefixes.items()}

    def fn(ids, step, states):
        prefixes = [tuple(int(t) for t in row[1:]) for row in ids.numpy()]
        if seen is not None:
            seen.extend(prefixes)
        found = [rows.get(prefix, 63) for prefix in prefixes]
        return tf.gather(table, found), states

    return DecoderScorer(fn)


def search(preferences, phrases=None, beam_size=3, seen=None):
    scorers = [WeightedScorer(fixed_decoder(preferences, seen), 1.0)]
    if phrases:
        features = phrase_features(phrases)
        bias = PhraseBiasScorer(features["phrase_ids"], features["phrase_boosts"], 1, SURFACES)
        scorers.append(WeightedScorer(bias, 1.0))
    ids, scores = scored_beam_search(scorers, tf.zeros([1], tf.int32), beam_size, 12, VOCAB, 0.0)
    return [BYTES.decode(row) for row in ids.numpy()[0]], scores.numpy()[0]


def test_a_listed_phrase_wins_a_close_call_and_keeps_its_bonus():
    preferences = {"a cap": -1.0, "a cat": -1.5}
    plain_texts, plain_scores = search(preferences)
    assert plain_texts[:2] == ["a cap", "a cat"]
    texts, scores = search(preferences, [("cat", 1.0)])
    assert texts[0] == "a cat"
    assert scores[0] == pytest.approx(plain_scores[1] + 3 * 1.0, abs=1e-5)


def test_a_list_that_matches_nothing_leaves_the_search_as_it_is():
    """Hypotheses that start a listed phrase and fail it end with no bonus:
    the result and its scores are the unbiased search's."""
    preferences = {"a cap": -1.0, "a cab": -1.5}
    plain_texts, plain_scores = search(preferences)
    texts, scores = search(preferences, [("cat", 1.0), ("dog", 3.0)])
    assert texts[:2] == plain_texts[:2]
    np.testing.assert_allclose(scores[:2], plain_scores[:2], atol=1e-5)


def test_a_failed_match_does_not_push_the_best_hypothesis_out_of_the_beam():
    """One beam: "a c" starts the listed "cat" and outranks "a d" with its
    bonus, then fails ("a cap"). Ranked with the bonus, the single beam
    would hold only "a c..." and end on "a cap"; the beam kept for sure
    holds "a d" throughout, so the search ends as without the list."""
    preferences = {"a dog": -1.0, "a cap": -2.0}
    plain_texts, plain_scores = search(preferences, beam_size=1)
    assert plain_texts == ["a dog"]
    texts, scores = search(preferences, [("cat", 1.0)], beam_size=1)
    assert texts == plain_texts
    assert scores[0] == pytest.approx(plain_scores[0], abs=1e-5)
    # The same beam still lets a listed word that was said win, with its bonus.
    preferences = {"a dog": -1.0, "a cat": -2.0}
    plain_texts, plain_scores = search(preferences, beam_size=2)
    assert plain_texts == ["a dog", "a cat"]
    texts, scores = search(preferences, [("cat", 1.0)], beam_size=1)
    assert texts == ["a cat"]
    assert scores[0] == pytest.approx(plain_scores[1] + 3 * 1.0, abs=1e-5)


def test_an_extra_beam_whose_match_fails_is_dropped():
    """One beam keeps "a d" (p 0.6 against "a c"'s 0.4), which then splits
    ("a dog", "a dob"): "a cap" is the better sequence, found by two beams.
    Listing "cat" holds "a ca" in an extra beam; when "p" fails the match it
    is dropped rather than promoted, so one beam still ends as without the list."""
    preferences = {"a dob": -1.2, "a dog": -1.0, "a cap": -3.5}
    assert search(preferences, beam_size=2)[0][0] == "a cap"
    plain_texts, plain_scores = search(preferences, beam_size=1)
    assert plain_texts == ["a dog"]
    texts, scores = search(preferences, [("cat", 1.0)], beam_size=1)
    assert texts == plain_texts
    assert scores[0] == pytest.approx(plain_scores[0], abs=1e-5)


def test_an_empty_list_leaves_a_traced_search_as_it_is():
    """A hotwords file with no phrase gives `[0, 1]` phrase ids: the traced
    search (as the decoder runs it) still runs, and biases nothing."""
    preferences = {"a cap": -1.0, "a cab": -1.5}
    eager = fixed_decoder(preferences).fn

    def traced_fn(ids, step, states):
        logits = tf.py_function(lambda i: eager(i, step, states)[0], [ids], tf.float32)
        logits.set_shape([None, VOCAB])
        return logits, states

    features = phrase_features([])
    bias = PhraseBiasScorer(features["phrase_ids"], features["phrase_boosts"], 1, SURFACES)
    scorers = [WeightedScorer(DecoderScorer(traced_fn), 1.0), WeightedScorer(bias, 1.0)]
    search_ = tf.function(
        lambda: scored_beam_search(scorers, tf.zeros([1], tf.int32), 3, 12, VOCAB, 0.0)
    )
    ids, scores = search_()
    plain_texts, plain_scores = search(preferences)
    assert [BYTES.decode(row) for row in ids.numpy()[0]] == plain_texts
    np.testing.assert_allclose(scores.numpy()[0], plain_scores, atol=1e-5)


def test_no_hypothesis_is_extended_after_eos():
    """One beam: "dog" and "cat" (listed) both end at the same step, so every
    candidate kept for sure is an EOS; the one raised by its bonus above 0
    must not be kept alive past its end (nothing may extend "cat<EOS>")."""
    seen = []
    texts, _ = search({"dog": -1.0, "cat": -1.5}, [("cat", 1.0)], beam_size=1, seen=seen)
    assert texts == ["cat"]
    assert seen and not [prefix for prefix in seen if EOS_ID in prefix]


def test_a_shorter_phrase_completed_keeps_its_extra_beam_when_a_longer_one_fails():
    """ "new yolk" holds "new york" in an extra beam until "l" fails it, but
    "new" is complete by then: the hypothesis keeps "new"'s bonus for sure
    and wins with it, where dropping it would end on "old yolk"."""
    preferences = {"old yolk": -1.0, "new yolk": -1.6}
    plain_texts, plain_scores = search(preferences, beam_size=2)
    assert plain_texts == ["old yolk", "new yolk"]
    texts, scores = search(preferences, [("new", 0.5), ("new york", 2.0)], beam_size=1)
    assert texts == ["new yolk"]
    assert scores[0] == pytest.approx(plain_scores[1] + 3 * 0.5, abs=1e-5)


def test_an_empty_extra_beam_is_never_extended():
    """Two beams: after the first step the first two hold "d" and "c"; the
    only other hypothesis holding a bonus is "C" (the list's upper case), so
    one extra beam holds it and the other stays empty, where an extension of
    an empty beam (score -1e7 plus a bonus) used to fill it."""
    features = phrase_features([("cat", 30.0)])
    bias = PhraseBiasScorer(features["phrase_ids"], features["phrase_boosts"], 1, SURFACES)
    decoder = fixed_decoder({"dog": -1.0, "cup": -3.0})
    search_ = BeamSearch(
        [WeightedScorer(decoder, 1.0), WeightedScorer(bias, 1.0)], 2, 12, VOCAB, alpha=0.0
    )
    state = search_.step(search_.initial_state(tf.zeros([1], tf.int32)))
    texts = [BYTES.decode(row[1:]) for row in state.alive_seq.numpy()[0]]
    scores, holds = state.alive_log_probs.numpy()[0], state.ranking_state[0].numpy()[0]
    assert texts[:3] == ["d", "c", "C"]
    assert (scores[:3] > -100).all() and holds[:3].all()
    assert scores[3] == -INF and not holds[3]


def test_a_running_match_that_never_completes_stops_the_search_as_without_it():
    """Two beams: "x" finishes first and the search without a list stops
    before "yzzz" can finish, leaving its second slot empty. A running match
    ("qqqqqqqq" of a listed "qqqqqqqqq", never completed) must not keep the
    search going: the stop bound reads the scores kept for sure."""
    preferences = {"x": -0.5, "yzzz": -2.5, "qqqqqqqqr": -6.0}
    plain_seen, seen = [], []
    plain_texts, plain_scores = search(preferences, beam_size=2, seen=plain_seen)
    assert plain_texts == ["x", ""] and plain_scores[1] == -INF
    texts, scores = search(preferences, [("qqqqqqqqq", 1.0)], beam_size=2, seen=seen)
    assert texts == plain_texts
    np.testing.assert_allclose(scores, plain_scores, atol=1e-5)
    # Twice the beams a step (the extra ones), the same number of steps.
    assert len(seen) == 2 * len(plain_seen)


def test_the_decoder_biases_speech_only_where_the_list_matches(speech_run):
    """The tiny recognizer hears "hi" (tone) and "no" (noise); listing "no"
    turns the tone's close call, listing "nope" changes nothing: its "no"
    fails at EOS and the bonus is taken back."""
    clips = speech_features(list(tone_and_noise().values()), speech_run.hparams)
    features = {k: tf.constant(v) for k, v in clips.items()}

    def decode(phrases=None):
        config = DecodeConfig.parse(CTC_BEAM_DECODE)
        listed = phrase_features(phrases) if phrases else None
        ids, scores = BatchDecoder(
            speech_run.model, speech_run.run_config, config, listed, SURFACES
        )(features)
        return [BYTES.decode(row[0]) for row in ids], scores[:, 0]

    texts, scores = decode()
    assert texts == ["hi", "no"]
    biased, biased_scores = decode([("no", 1.0)])
    assert biased == ["no", "no"]
    # The fixed-shape search (XLA, TFLite) keeps the provisional beams too.
    config = DecodeConfig.parse(CTC_BEAM_DECODE).for_model(speech_run.model)
    listed = {k: tf.constant(v) for k, v in phrase_features([("no", 1.0)]).items()}
    cap = decode_cap(speech_run.run_config, config)
    ids, fixed_scores = model_search(
        speech_run.model,
        {**features, **listed},
        config,
        cap,
        fixed_shapes=True,
        target_surfaces=SURFACES,
    )
    assert [BYTES.decode(row[0]) for row in ids.numpy()] == biased
    np.testing.assert_allclose(fixed_scores.numpy()[:, 0], biased_scores, atol=1e-4)
    unmatched, unmatched_scores = decode([("nope", 1.0)])
    assert unmatched == texts
    np.testing.assert_allclose(unmatched_scores, scores, atol=1e-5)


def test_a_hotwords_file_is_read_with_its_boosts(tmp_path):
    path = tmp_path / "hotwords.txt"
    path.write_text("Layla\n\n  new   york :3.5\nbilly :0.5\n")
    assert read_phrase_file(str(path), 1.5) == [("Layla", 1.5), ("new york", 3.5), ("billy", 0.5)]
    features = phrase_features(read_phrase_file(str(path)))
    listed = [BYTES.decode(row) for row in features["phrase_ids"]]
    assert listed[:4] == ["Layla", "layla", "LAYLA", "new york"]  # every phrase in 3 cases
    assert len(listed) == 3 + 2 + 2 == len(features["phrase_boosts"])
    path.write_text("layla :lots\n")
    with pytest.raises(PhraseListError, match="line 1: the boost after ' :' must be a number > 0"):
        read_phrase_file(str(path))
    with pytest.raises(PhraseListError, match="cannot be read"):
        read_phrase_file(str(tmp_path / "missing.txt"))


# A SentencePiece-like vocabulary: a leading space starts a word.
PIECES = [b"", b"", b"", b" the", b" c", b"at", b" ", b"s", b"a", b"t", b"p", b" sat"]
PIECES += [b" new", b" york", b"y", b"ork", b" yo", b"lk", b" cat", b"c", b"ne", b"w"]


@pytest.mark.parametrize(
    "pieces, text",
    [
        ([" the", " cat", " sat"], "the cat sat"),
        ([" the", " c", "at", " sat"], "the cat sat"),  # another segmentation, the same
        ([" the", " c", "a", "t", "s", " sat"], "the cats sat"),
        ([" the", " c", "a", "p"], "the cap"),
        ([" new", " york"], "new york"),  # across the phrase's space
        ([" new", " ", "y", "ork"], "new york"),  # a bare space, then the word
        ([" new", " yo", "lk"], "new yolk"),
        (["ne", "w"], "new"),  # no leading space: the first piece starts a word
        (["c", "at"], "cat"),
        ([" the", "c", "at"], "thecat"),  # not at a word start
    ],
)
def test_pieces_earn_what_the_bytes_of_their_text_earn(pieces, text):
    tokens = [PIECES.index(piece.encode()) for piece in pieces] + [EOS_ID]
    assert spelled_bonus(PHRASES, tokens, PIECES) == pytest.approx(total_bonus(PHRASES, text))
    assert spelled_bonus(PHRASES, tokens[:-1], PIECES) == pytest.approx(
        total_bonus(PHRASES, text, finish=False)
    )


def test_an_unknown_piece_ends_the_match():
    tokens = [PIECES.index(b" c"), 2, PIECES.index(b"at"), EOS_ID]  # 2: <unk>, no text
    assert spelled_bonus(PHRASES, tokens, PIECES) == 0.0


def test_symbol_targets_match_phrases_of_their_symbols():
    """The algorithmic problems' ids are " 0", " 1", ...: each starts a word."""
    symbols = IntegerEncoder(3)
    tokens = symbols.encode("2 1 0") + [EOS_ID]
    bonus = spelled_bonus([("1 0", 1.0)], tokens, symbols.token_surfaces())
    assert bonus == pytest.approx(3.0)


def test_a_vocabulary_without_word_starts_is_refused():
    with pytest.raises(ValueError, match="no id beginning a word"):
        PhraseBiasScorer(*phrase_features(PHRASES).values(), 1, [b"", b"", b"", b"a", b"b"])
