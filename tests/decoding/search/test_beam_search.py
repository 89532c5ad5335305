"""Beam search: T2T's hand-built cases, scores, states, the Transformer, XLA, joint CTC."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.beam_search import INF, beam_search, scored_beam_search
from t2t_lite.decoding.search.ctc_greedy import ctc_greedy_decode
from t2t_lite.decoding.search.ctc_prefix_scorer import CtcPrefixScorer
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer
from t2t_lite.decoding.search.model_search import BatchDecoder, model_search
from t2t_lite.decoding.search.scorer import WeightedScorer
from t2t_lite.hparam import HParams
from t2t_lite.models.transformer import Transformer
from tests.helpers import NO_DROPOUT, fit_one_batch, random_sequences

# How a search is run: eagerly, in a graph, and with fixed shapes compiled by XLA.
MODES = ("eager", "graph", "fixed_xla")


def run(mode, fn, initial_ids, beam_size, decode_length, vocab_size, alpha, **kwargs):
    search = lambda: beam_search(
        fn,
        tf.constant(initial_ids, tf.int32),
        beam_size,
        decode_length,
        vocab_size,
        alpha,
        use_fixed_shapes=mode == "fixed_xla",
        **kwargs,
    )
    if mode != "eager":
        search = tf.function(search, jit_compile=mode == "fixed_xla")
    ids, scores = search()
    return ids.numpy(), scores.numpy()


def per_step_fn(probabilities):
    """T2T's test model: fixed probabilities per step (and per beam slot)."""
    log_probs = tf.math.log(tf.constant(probabilities, tf.float32))
    vocab_size = log_probs.shape[-1]

    def fn(ids, step, states):
        rows = tf.reshape(log_probs[step], [-1, vocab_size])
        return tf.broadcast_to(rows, [tf.shape(ids)[0], vocab_size]), states

    return fn


def previous_token(ids, step):
    """The last decoded token whatever `ids` holds: the prefix (dynamic), the
    last token (fixed shapes with states) or the whole buffer (fixed, none)."""
    return tf.gather(ids, tf.minimum(step, tf.shape(ids)[1] - 1), axis=1)


def bigram_fn(log_prob_table):
    """Next-token log probs depend on the previous token: `table[previous]`."""
    table = tf.constant(log_prob_table, tf.float32)
    return lambda ids, step, states: (tf.gather(table, previous_token(ids, step)), states)


# T2T's beam_search_test.py cases. T2T's expected ids start with the start
# token 0; ours drop it and are padded with 0 to decode_length.
BEAM_TWO = [
    [[0.1, 0.1, 0.8], [0.1, 0.1, 0.8]],
    [[0.4, 0.5, 0.1], [0.2, 0.4, 0.4]],
    [[0.05, 0.9, 0.05], [0.4, 0.4, 0.2]],
]
BATCH_TWO = [  # position x batch x beam x vocab
    [[[0.1, 0.1, 0.8], [0.1, 0.1, 0.8]], [[0.1, 0.1, 0.8], [0.1, 0.1, 0.8]]],
    [[[0.4, 0.5, 0.1], [0.2, 0.4, 0.4]], [[0.3, 0.6, 0.1], [0.2, 0.4, 0.4]]],
    [[[0.05, 0.9, 0.05], [0.4, 0.4, 0.2]], [[0.05, 0.9, 0.05], [0.4, 0.4, 0.2]]],
]


def penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


T2T_CASES = {
    # name: (probabilities, batch, beam, decode_length, alpha, stop_early, ids, scores)
    "greedy_batch_one": (
        [[[0.7, 0.3]], [[0.4, 0.6]], [[0.5, 0.5]]], 1, 1, 3, 0.0, True,
        [[[0, 1, 0]]], np.log([[0.7 * 0.6]]),
    ),
    "greedy_corner_case_no_eos": (  # nothing finished: alive beam, raw log prob
        [[0.2, 0.1, 0.7], [0.4, 0.1, 0.5]], 1, 1, 2, 0.0, True,
        [[[2, 2]]], np.log([[0.7 * 0.5]]),
    ),
    "not_greedy_beam_two_without_stop_early": (
        BEAM_TWO, 1, 2, 3, 0.0, False,
        [[[2, 1, 0], [2, 0, 1]]], np.log([[0.8 * 0.5, 0.8 * 0.4 * 0.9]]),
    ),
    "not_greedy_beam_two_with_alpha": (  # alpha 3.5 puts the longer one first
        BEAM_TWO, 1, 2, 3, 3.5, True,
        [[[2, 0, 1], [2, 1, 0]]],
        [[np.log(0.8 * 0.4 * 0.9) / penalty(3, 3.5), np.log(0.8 * 0.5) / penalty(2, 3.5)]],
    ),
    "not_greedy_batch_two_beam_two_with_alpha": (  # ...but not in batch item 1
        BATCH_TWO, 2, 2, 3, 3.5, True,
        [[[2, 0, 1], [2, 1, 0]], [[2, 1, 0], [2, 0, 1]]],
        [
            [np.log(0.8 * 0.4 * 0.9) / penalty(3, 3.5), np.log(0.8 * 0.5) / penalty(2, 3.5)],
            [np.log(0.8 * 0.6) / penalty(2, 3.5), np.log(0.8 * 0.3 * 0.9) / penalty(3, 3.5)],
        ],
    ),
}  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(T2T_CASES))
def test_t2t_hand_built_distributions(case, mode):
    probabilities, batch, beam, length, alpha, stop_early, ids, scores = T2T_CASES[case]
    vocab = np.shape(probabilities)[-1]
    got_ids, got_scores = run(
        mode, per_step_fn(probabilities), [0] * batch, beam, length, vocab, alpha,
        stop_early=stop_early,
    )  # fmt: skip
    np.testing.assert_array_equal(got_ids, ids)
    np.testing.assert_allclose(got_scores, scores, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_stop_early_guarantees_the_first_beam_and_stops_sooner(mode):
    visited = []

    def fn(ids, step, states):
        visited.append(step)  # traced once in a graph; counts steps eagerly
        return per_step_fn(BEAM_TWO + [[[1 / 3] * 3] * 2] * 7)(ids, step, states)

    ids, scores = run(mode, fn, [0], 2, 10, 3, 0.0, stop_early=True)
    np.testing.assert_array_equal(ids[0, 0], [2, 1] + [0] * 8)
    assert np.exp(scores[0, 0]) == pytest.approx(0.8 * 0.5)
    if mode == "eager":  # [2, 1] (0.4) beats the best alive prefix (0.32) after step 1
        assert len(visited) == 2


def test_length_penalty_changes_the_ranking():
    """Batch item 0 of T2T's case: the short sequence wins on log probability,
    the long one once alpha=3.5 divides by a length penalty."""
    fn = per_step_fn(BATCH_TWO)
    raw_ids, raw_scores = run("eager", fn, [0, 0], 2, 3, 3, alpha=0.0, stop_early=False)
    ids, scores = run("eager", fn, [0, 0], 2, 3, 3, alpha=3.5, stop_early=False)
    np.testing.assert_array_equal(raw_ids[0], [[2, 1, 0], [2, 0, 1]])
    np.testing.assert_array_equal(ids[0], [[2, 0, 1], [2, 1, 0]])
    np.testing.assert_allclose(raw_scores[0], np.log([0.8 * 0.5, 0.8 * 0.4 * 0.9]), rtol=1e-5)
    np.testing.assert_allclose(
        scores[0] * penalty(np.array([3, 2]), 3.5), raw_scores[0][::-1], rtol=1e-5
    )


# Tokens: 0 PAD/start, 1 EOS, 2 a, 3 b, 4 c. Greedy takes a (0.56), c (0.5),
# EOS (0.6): 0.168. Starting with the less likely b leads to EOS at 0.9: 0.36.
MYOPIC_PROBS = [
    [0.01, 0.01, 0.56, 0.40, 0.02],  # after the start token
    [0.2, 0.2, 0.2, 0.2, 0.2],  # after EOS (never used)
    [0.05, 0.2, 0.1, 0.15, 0.5],  # after a
    [0.02, 0.9, 0.03, 0.03, 0.02],  # after b
    [0.1, 0.6, 0.1, 0.1, 0.1],  # after c
]


def numpy_greedy(log_prob_table, start, length):
    tokens, previous = [], start
    for _ in range(length):
        previous = int(np.argmax(log_prob_table[previous]))
        tokens.append(previous)
        if previous == 1:
            break
    return tokens + [0] * (length - len(tokens))


@pytest.mark.parametrize("mode", MODES)
def test_beam_one_is_greedy_and_a_wider_beam_finds_a_better_sequence(mode):
    table = np.log(MYOPIC_PROBS)
    greedy_ids, greedy_scores = run(mode, bigram_fn(table), [0], 1, 5, 5, alpha=0.0)
    np.testing.assert_array_equal(greedy_ids[0, 0], numpy_greedy(table, 0, 5))
    np.testing.assert_array_equal(greedy_ids[0, 0], [2, 4, 1, 0, 0])
    assert np.exp(greedy_scores[0, 0]) == pytest.approx(0.56 * 0.5 * 0.6, rel=1e-5)

    ids, scores = run(mode, bigram_fn(table), [0], 2, 5, 5, alpha=0.0, stop_early=False)
    np.testing.assert_array_equal(ids[0], [[3, 1, 0, 0, 0], [2, 4, 1, 0, 0]])
    np.testing.assert_allclose(np.exp(scores[0]), [0.4 * 0.9, 0.56 * 0.5 * 0.6], rtol=1e-5)
    assert scores[0, 0] > greedy_scores[0, 0]


@pytest.mark.parametrize("mode", MODES)
def test_shapes_order_and_scores_are_penalized_log_probs_of_the_ids(mode):
    batch, beam, length, vocab, alpha = 2, 3, 6, 5, 0.6
    table = tf.nn.log_softmax(tf.random.stateless_normal([vocab, vocab], seed=[1, 2]), -1).numpy()
    initial = [0, 2]
    ids, scores = run(mode, bigram_fn(table), initial, beam, length, vocab, alpha, stop_early=False)
    assert ids.shape == (batch, beam, length) and ids.dtype == np.int32
    assert scores.shape == (batch, beam) and scores.dtype == np.float32
    assert np.all(np.diff(scores, axis=1) <= 0), "best first"
    assert np.all(scores > -INF / 2), "every beam finished in this case"
    for b in range(batch):
        for k in range(beam):
            tokens = list(ids[b, k])
            end = tokens.index(1) + 1  # finished: EOS, then only padding
            assert tokens[end:] == [0] * (length - end)
            previous = [initial[b]] + tokens[: end - 1]
            log_prob = sum(table[p, t] for p, t in zip(previous, tokens[:end], strict=True))
            assert scores[b, k] == pytest.approx(log_prob / penalty(end, alpha), abs=1e-5)


def test_fixed_shapes_stop_at_stop_length_as_dynamic_stops_at_decode_length():
    """A fixed-shape buffer of 9 steps with `stop_length` 5 (a tensor) gives
    the dynamic search of decode length 5, then zeros: TFLite's and XLA's
    searches stop where the SavedModel's does."""
    # 12 tokens, 2 beams: EOS (and PAD) are never among the 4 candidates, so
    # no beam finishes and the decode length alone ends the search.
    unlikely = tf.one_hot(0, 12) + tf.one_hot(1, 12)
    logits = tf.random.stateless_normal([12, 12], seed=[5, 6]) - 8.0 * unlikely
    table = tf.nn.log_softmax(logits, -1).numpy()
    dynamic_ids, dynamic_scores = run("graph", bigram_fn(table), [0, 3], 2, 5, 12, alpha=0.6)
    fixed_ids, fixed_scores = run(
        "fixed_xla", bigram_fn(table), [0, 3], 2, 9, 12, alpha=0.6, stop_length=tf.constant(5)
    )
    np.testing.assert_array_equal(fixed_ids[:, :, :5], dynamic_ids)
    assert not fixed_ids[:, :, 5:].any()
    np.testing.assert_allclose(fixed_scores, dynamic_scores, rtol=1e-5)
    longer_ids, _ = run("fixed_xla", bigram_fn(table), [0, 3], 2, 9, 12, alpha=0.6)
    assert longer_ids[:, :, 5:].any()  # without stop_length the buffer fills further


def test_output_shape_is_static_in_a_graph():
    fn = per_step_fn(BEAM_TWO)
    for fixed in (False, True):
        search = tf.function(
            lambda fixed=fixed: beam_search(
                fn, tf.zeros([1], tf.int32), 2, 3, 3, 0.0, use_fixed_shapes=fixed
            )
        )
        ids, scores = search.get_concrete_function().structured_outputs
        assert ids.shape.as_list() == [1, 2, 3] and scores.shape.as_list() == [1, 2]


def test_states_are_tiled_and_follow_their_beams():
    """A state that records each beam's history. At every step the history the
    fn receives is exactly the prefix of the beam it is asked to extend, and
    logits computed from the state alone give the same search as logits
    computed from the ids prefix (dynamic and fixed shapes under XLA)."""
    batch, beam, length, vocab, buckets = 2, 3, 6, 5, 4
    table = tf.random.stateless_normal([buckets, vocab], seed=[3, 4])
    initial = np.array([0, 3], np.int32)
    mismatches = []

    def from_prefix(ids, step, states):  # the stateless reference (dynamic only)
        return tf.gather(table, tf.reduce_sum(ids, 1) % buckets), states

    def from_state(ids, step, states):
        history = states["history"]
        columns = tf.range(history.shape[1])
        history = tf.where(columns == step, ids[:, -1:], history)
        if tf.executing_eagerly() and not np.array_equal(history[:, : step + 1], ids):
            mismatches.append(int(step))
        prefix_sum = tf.reduce_sum(tf.where(columns <= step, history, 0), 1)
        return tf.gather(table, prefix_sum % buckets), {"history": history}

    states = {"history": np.pad(initial[:, None], [[0, 0], [0, length]])}
    expected = run("eager", from_prefix, initial, beam, length, vocab, 0.6, stop_early=False)
    for mode in ("eager", "fixed_xla"):
        ids, scores = run(
            mode, from_state, initial, beam, length, vocab, 0.6, states=states, stop_early=False
        )
        np.testing.assert_array_equal(ids, expected[0])
        np.testing.assert_allclose(scores, expected[1], atol=1e-6)
    assert not mismatches
    assert len({tuple(row) for row in expected[0].reshape(-1, length)}) > batch  # beams differ


def test_untouched_states_are_not_reordered_and_empty_ones_grow():
    """The loop body gathers (copies) a state to follow its beams only when
    the fn changed it: one it returns as given is still the copy tiled at the
    start. A state with a dimension of size 0 may grow along it."""
    batch, beam, length, vocab = 2, 3, 4, 5
    table = tf.random.stateless_normal([vocab, vocab], seed=[1, 2])

    def gathers_in_loop_body(fn, states):
        search = tf.function(
            lambda: beam_search(
                fn, tf.zeros([batch], tf.int32), beam, length, vocab, 0.0, states=states
            )
        )
        graph = search.get_concrete_function().graph.as_graph_def()
        (loop,) = [node for node in graph.node if node.op in ("While", "StatelessWhile")]
        body_name = loop.attr["body"].func.name
        (body,) = [f for f in graph.library.function if f.signature.name == body_name]
        return sum(node.op == "GatherV2" for node in body.node_def)

    def fn(ids, step, states, touch):
        logits = tf.gather(table, ids[:, -1])
        grown = tf.concat([states["grown"], tf.cast(ids[:, -1:], tf.float32)], axis=1)
        fixed = tf.identity(states["fixed"]) if touch else states["fixed"]
        return logits, {"fixed": fixed, "grown": grown}

    states = {"fixed": tf.ones([batch, 7]), "grown": tf.zeros([batch, 0])}
    untouched = gathers_in_loop_body(lambda *a: fn(*a, touch=False), states)
    touched = gathers_in_loop_body(lambda *a: fn(*a, touch=True), states)
    assert touched == untouched + 1


def test_bad_arguments_are_rejected():
    fn = per_step_fn(BEAM_TWO)
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        beam_search(fn, tf.zeros([1], tf.int32), 0, 3, 3, 0.0)
    with pytest.raises(ValueError, match="needs decode_length as a Python int"):
        beam_search(fn, tf.zeros([1], tf.int32), 2, tf.constant(3), 3, 0.0, use_fixed_shapes=True)
    with pytest.raises(ValueError, match="a state with a dimension of size 0 grows"):
        beam_search(fn, tf.zeros([1], tf.int32), 2, 3, 3, 0.0, use_fixed_shapes=True,
                    states={"grown": tf.zeros([1, 0])})  # fmt: skip


# -- the Transformer ---------------------------------------------------------------------

VOCAB = 12
DECODE_LENGTH = 8


@pytest.fixture(scope="module")
def trained():
    """A tiny Transformer trained briefly on one random batch (not degenerate),
    with that batch's inputs and unseen ones to decode."""
    tf.keras.utils.set_random_seed(3)
    hparams = registry.hparams("transformer_tiny")
    hparams.parse(f"hidden_size=32,filter_size=64,num_heads=4,num_hidden_layers=2,{NO_DROPOUT}")
    model = Transformer.from_hparams(
        hparams, input_modality="symbol", input_vocab_size=VOCAB, target_vocab_size=VOCAB
    )
    rng = np.random.default_rng(0)
    features = {
        "inputs": random_sequences(rng, 3, 6, VOCAB),
        "targets": random_sequences(rng, 3, 7, VOCAB),
    }
    fit_one_batch(model, features, 30, tf.keras.optimizers.Adam(3e-3), label_smoothing=0.1)
    inputs = {"inputs": np.concatenate([features["inputs"], random_sequences(rng, 2, 6, VOCAB)])}
    return model, inputs


def cached_search(
    model, inputs, beam_size, alpha=0.6, use_fixed_shapes=False, jit=False, grow=False
):
    def search():
        cache = model.initial_decode_cache(inputs, None if grow else DECODE_LENGTH)
        fn = lambda ids, step, cache: model.decode_step(ids[:, -1], step, cache)
        batch = len(inputs["inputs"])
        return beam_search(
            fn, tf.zeros([batch], tf.int32), beam_size, DECODE_LENGTH, VOCAB, alpha,
            states=cache, stop_early=False, use_fixed_shapes=use_fixed_shapes,
        )  # fmt: skip

    ids, scores = tf.function(search, jit_compile=jit)()
    return ids.numpy(), scores.numpy()


def uncached_search(model, inputs, beam_size, alpha=0.6):
    """Recomputes the decoder over the whole prefix at every step."""

    def search():
        memory, memory_mask = model.encode(inputs, training=False)

        def fn(ids, step, states):
            # `decode` shifts its targets right (prepending PAD, our start
            # token), so the prefix without the start token plus one dummy
            # position gives the logits for position `step` last.
            targets = tf.pad(ids[:, 1:], [[0, 0], [0, 1]])
            return model.decode(targets, states["memory"], states["memory_mask"])[:, -1], states

        batch = len(inputs["inputs"])
        return beam_search(
            fn, tf.zeros([batch], tf.int32), beam_size, DECODE_LENGTH, VOCAB, alpha,
            states={"memory": memory, "memory_mask": memory_mask}, stop_early=False,
        )  # fmt: skip

    ids, scores = tf.function(search)()
    return ids.numpy(), scores.numpy()


def test_transformer_beam_one_equals_greedy_decode(trained, greedy_decode):
    model, inputs = trained
    greedy = tf.function(lambda: greedy_decode(model, inputs, DECODE_LENGTH))().numpy()
    ids, _ = cached_search(model, inputs, beam_size=1)
    np.testing.assert_array_equal(ids[:, 0], greedy)


@pytest.mark.parametrize("grow", [False, True], ids=["fixed", "growing"])
def test_transformer_cached_beam_search_equals_recomputation(trained, grow):
    model, inputs = trained
    ids, scores = cached_search(model, inputs, beam_size=4, grow=grow)
    slow_ids, slow_scores = uncached_search(model, inputs, beam_size=4)
    np.testing.assert_array_equal(ids, slow_ids)
    np.testing.assert_allclose(scores, slow_scores, atol=1e-4)
    assert len({tuple(row) for row in ids.reshape(-1, DECODE_LENGTH)}) > len(ids)  # beams differ


def test_transformer_fixed_shapes_equal_dynamic_and_compile_with_xla(trained):
    model, inputs = trained
    ids, scores = cached_search(model, inputs, beam_size=4)
    fixed_ids, fixed_scores = cached_search(model, inputs, beam_size=4, use_fixed_shapes=True)
    np.testing.assert_array_equal(fixed_ids, ids)
    np.testing.assert_allclose(fixed_scores, scores, atol=1e-5)
    xla_ids, xla_scores = cached_search(model, inputs, beam_size=4, use_fixed_shapes=True, jit=True)
    np.testing.assert_array_equal(xla_ids, ids)
    np.testing.assert_allclose(xla_scores, scores, atol=1e-4)  # XLA reorders float math


# -- joint CTC/attention decoding ------------------------------------------------------


@pytest.fixture(scope="module")
def trained_ctc():
    """A tiny Transformer with a CTC head trained on a copy task (targets =
    inputs), so that both scorers are confident and hypotheses finish."""
    tf.keras.utils.set_random_seed(5)
    hparams = registry.hparams("transformer_tiny")
    hparams.parse(
        f"hidden_size=32,filter_size=64,num_heads=4,num_hidden_layers=1,ctc_loss_weight=0.5,"
        f"{NO_DROPOUT}"
    )
    model = Transformer.from_hparams(
        hparams, input_modality="symbol", input_vocab_size=VOCAB, target_vocab_size=VOCAB
    )
    rng = np.random.default_rng(1)
    ids = random_sequences(rng, 8, 7, VOCAB)
    fit_one_batch(model, {"inputs": ids, "targets": ids}, 40, tf.keras.optimizers.Adam(1e-2))
    return model, {"inputs": np.concatenate([ids[:3], random_sequences(rng, 2, 7, VOCAB)])}


def joint_search(model, inputs, ctc_weight, beam_size=3, use_fixed_shapes=False, jit=False):
    def search():
        memory, mask = model.encode(inputs, training=False)
        cache = model.initial_decode_cache(inputs, DECODE_LENGTH, encoded=(memory, mask))
        lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        ctc = CtcPrefixScorer(model.ctc_log_probs(memory), lengths)
        fn = lambda ids, step, cache: model.decode_step(ids[:, -1], step, cache)
        decoder = DecoderScorer(fn, cache, use_fixed_shapes=use_fixed_shapes)
        return scored_beam_search(
            [WeightedScorer(decoder, 1.0 - ctc_weight), WeightedScorer(ctc, ctc_weight)],
            tf.zeros([len(inputs["inputs"])], tf.int32), beam_size, DECODE_LENGTH, VOCAB,
            0.6, use_fixed_shapes=use_fixed_shapes,
        )  # fmt: skip

    ids, scores = tf.function(search, jit_compile=jit)()
    return ids.numpy(), scores.numpy()


def test_joint_search_with_ctc_weight_zero_equals_the_plain_search(trained_ctc):
    model, inputs = trained_ctc
    ids, scores = joint_search(model, inputs, ctc_weight=0.0)

    def plain():
        cache = model.initial_decode_cache(inputs, DECODE_LENGTH)
        fn = lambda ids, step, cache: model.decode_step(ids[:, -1], step, cache)
        return beam_search(
            fn, tf.zeros([len(inputs["inputs"])], tf.int32), 3, DECODE_LENGTH, VOCAB, 0.6,
            states=cache,
        )  # fmt: skip

    plain_ids, plain_scores = tf.function(plain)()
    np.testing.assert_array_equal(ids, plain_ids.numpy())
    np.testing.assert_allclose(scores, plain_scores.numpy(), atol=1e-5)


def test_joint_scores_are_the_weighted_attention_and_ctc_log_probabilities(trained_ctc):
    """The best finished hypothesis's score, recomputed independently:
    ((1 - w) log p_att(h) + w log p_ctc(h)) / length penalty, with log p_ctc
    from TF's CTC loss (a sum over every alignment)."""
    model, inputs = trained_ctc
    weight = 0.4
    ids, scores = joint_search(model, inputs, ctc_weight=weight)
    best = ids[:, 0]
    lengths = (best != 0).sum(axis=1)  # tokens including EOS
    assert np.all(best[np.arange(len(best)), lengths - 1] == 1), "every best beam finished"
    logits = model({"inputs": inputs["inputs"], "targets": best}, training=False)
    log_probs = tf.nn.log_softmax(logits).numpy()
    attention = np.array(
        [log_probs[row, np.arange(n), best[row, :n]].sum() for row, n in enumerate(lengths)]
    )
    memory, mask = model.encode(inputs, training=False)
    ctc = -summed_ctc_per_row(model.ctc_log_probs(memory), mask, best)
    expected = ((1 - weight) * attention + weight * ctc) / penalty(lengths, 0.6)
    np.testing.assert_allclose(scores[:, 0], expected, atol=2e-3)


def summed_ctc_per_row(log_probs, mask, labels):
    labels = tf.where(labels == 1, 0, labels)  # EOS is not a CTC label
    return tf.nn.ctc_loss(
        labels=labels,
        logits=log_probs,
        label_length=tf.reduce_sum(tf.cast(labels != 0, tf.int32), axis=1),
        logit_length=tf.reduce_sum(tf.cast(mask, tf.int32), axis=1),
        logits_time_major=False,
        blank_index=0,
    ).numpy()


def test_joint_search_dynamic_fixed_shapes_and_xla_agree(trained_ctc):
    model, inputs = trained_ctc
    ids, scores = joint_search(model, inputs, ctc_weight=0.5)
    fixed_ids, fixed_scores = joint_search(model, inputs, 0.5, use_fixed_shapes=True)
    np.testing.assert_array_equal(fixed_ids, ids)
    np.testing.assert_allclose(fixed_scores, scores, atol=1e-5)
    xla_ids, xla_scores = joint_search(model, inputs, 0.5, use_fixed_shapes=True, jit=True)
    np.testing.assert_array_equal(xla_ids, ids)
    np.testing.assert_allclose(xla_scores, scores, atol=1e-3)


def test_model_search_modes_and_empty_inputs(trained_ctc):
    """ctc_weight 1 is CTC greedy decoding; a row with inputs_length 0 is ""."""
    model, inputs = trained_ctc
    memory, mask = model.encode(inputs, training=False)
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    greedy_ids, _ = ctc_greedy_decode(model.ctc_log_probs(memory), lengths)

    def search(features, overrides):
        ids, scores = model_search(model, features, DecodeConfig.parse(overrides), DECODE_LENGTH)
        return ids.numpy(), scores.numpy()

    ids, _ = search(inputs, "ctc_weight=1.0")
    np.testing.assert_array_equal(ids[:, 0], greedy_ids.numpy())
    # The copy task is learned: CTC greedy reads the inputs back.
    np.testing.assert_array_equal(ids[:3, 0, :7], inputs["inputs"][:3])
    with_lengths = {**inputs, "inputs_length": np.array([7, 0, 7, 0, 7], np.int32)}
    ids, scores = search(with_lengths, "beam_size=2,ctc_weight=0.3")
    assert not ids[[1, 3]].any() and not scores[[1, 3]].any()
    assert ids[[0, 2, 4]].any()


def test_ctc_greedy_decode_merges_repeats_and_drops_blanks_and_padding():
    best = [[5, 5, 0, 5, 7, 7, 1, 9], [3, 0, 3, 3, 0, 0, 4, 4]]
    log_probs = np.log(np.full((2, 8, 10), 1e-3))
    for row, labels in enumerate(best):
        log_probs[row, np.arange(8), labels] = np.log(0.991)
    ids, scores = ctc_greedy_decode(log_probs, [7, 8])  # row 0: the last frame is padding
    assert ids.numpy().tolist() == [[5, 5, 7, 1, 0, 0, 0, 0, 0], [3, 3, 4, 1, 0, 0, 0, 0, 0]]
    np.testing.assert_allclose(scores.numpy(), [7 * np.log(0.991), 8 * np.log(0.991)], rtol=1e-5)


def test_batch_decoder_traces_once_for_every_batch_shape(trained_ctc):
    """Eval decoding meets batches of many sizes and lengths: one trace serves them."""
    model, inputs = trained_ctc
    limits = RunConfig.from_hparams(HParams(max_target_seq_length=DECODE_LENGTH))
    decoder = BatchDecoder(model, limits, DecodeConfig())
    for rows, length in ((5, 7), (2, 5), (3, 6)):
        ids, _ = decoder({"inputs": inputs["inputs"][:rows, :length]})
        assert ids.shape[:2] == (rows, 4)
    (function,) = decoder._functions.values()
    assert function.experimental_get_tracing_count() == 1
