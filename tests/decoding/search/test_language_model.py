"""Shallow fusion: a trained language model as one of the search's scorers."""

from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation.evaluator import DecodeEvaluator
from t2t_lite.decoding.search.beam_search import length_penalty, scored_beam_search
from t2t_lite.decoding.search.ctc_prefix_scorer import CtcPrefixScorer
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer
from t2t_lite.decoding.search.language_model import language_model_scorer, load_language_model
from t2t_lite.decoding.search.model_search import BatchDecoder, decode_cap
from t2t_lite.decoding.search.scorer import WeightedScorer
from tests.helpers import CTC_BEAM_DECODE
from tests.serving.runs import speech_features, tone_and_noise

# The tiny recognizer ranks "hi" over "no" for the tone by about 0.1; the
# LM prefers "no" by about log 3. This weight is enough to turn the tone
# into "no"; WEAK_WEIGHT is not.
PULLING_WEIGHT = 1.0
WEAK_WEIGHT = 0.02


@pytest.fixture(scope="module")
def clips(speech_run) -> dict:
    return speech_features(list(tone_and_noise().values()), speech_run.hparams)


def decode(run, clips, overrides: str):
    decoder = BatchDecoder(run.model, run.run_config, DecodeConfig.parse(overrides))
    ids, scores = decoder({k: tf.constant(v) for k, v in clips.items()})
    return [run.encoders["targets"].decode(row[0]) for row in ids], ids, scores


def test_an_lm_of_weight_zero_leaves_the_search_as_it_is(speech_run, no_lm_run, clips):
    """The joint search with the LM as a third scorer of weight 0 returns
    exactly the joint search's beams and scores."""
    model = speech_run.model
    features = {k: tf.constant(v) for k, v in clips.items()}
    cap = decode_cap(speech_run.run_config, DecodeConfig.parse(CTC_BEAM_DECODE))

    def search(lm_weight):
        memory, mask = model.encode(features, training=False)
        cache = model.initial_decode_cache(features, None, encoded=(memory, mask))
        frames = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        fn = lambda ids, step, states: model.decode_step(ids[:, -1], step, states)
        scorers = [
            WeightedScorer(DecoderScorer(fn, cache), 0.7),
            WeightedScorer(CtcPrefixScorer(model.ctc_log_probs(memory), frames), 0.3),
        ]
        if lm_weight is not None:
            lm = language_model_scorer(no_lm_run.output_dir, model, tf.shape(memory)[0])
            scorers.append(WeightedScorer(lm, lm_weight))
        return scored_beam_search(scorers, tf.zeros([2], tf.int32), 2, cap, 258, 0.6)

    ids, scores = search(None)
    zero_ids, zero_scores = search(0.0)
    np.testing.assert_array_equal(zero_ids.numpy(), ids.numpy())
    np.testing.assert_array_equal(zero_scores.numpy(), scores.numpy())
    pulled_ids, _ = search(PULLING_WEIGHT)
    assert not np.array_equal(pulled_ids.numpy(), ids.numpy())


def test_fusion_pulls_the_tone_towards_the_lm_and_leaves_what_it_agrees_with(
    speech_run, no_lm_run, clips
):
    texts, _, _ = decode(speech_run, clips, CTC_BEAM_DECODE)
    assert texts == ["hi", "no"]
    fused = f"{CTC_BEAM_DECODE},lm_dir={no_lm_run.output_dir},lm_weight={PULLING_WEIGHT}"
    texts, _, _ = decode(speech_run, clips, fused)
    assert texts == ["no", "no"]
    weak = f"{CTC_BEAM_DECODE},lm_dir={no_lm_run.output_dir},lm_weight={WEAK_WEIGHT}"
    texts, _, _ = decode(speech_run, clips, weak)
    assert texts == ["hi", "no"]


def test_a_fused_score_is_the_decoder_plus_weighted_lm_log_probability(
    speech_run, no_lm_run, clips
):
    """Recomputed by teacher forcing both models on the best hypothesis:
    (log p_att(h) + w log p_LM(h)) / length penalty, EOS included."""
    weight = 0.5
    overrides = f"beam_size=2,alpha=0.6,extra_length=8,ctc_weight=0,lm_dir={no_lm_run.output_dir}"
    _, ids, scores = decode(speech_run, clips, f"{overrides},lm_weight={weight}")
    best = ids[:, 0]
    lengths = (best != 0).sum(axis=1)
    assert np.all(best[np.arange(len(best)), lengths - 1] == 1), "every best beam finished"

    def summed_log_probs(logits):
        log_probs = tf.nn.log_softmax(logits).numpy()
        return np.array(
            [log_probs[r, np.arange(n), best[r, :n]].sum() for r, n in enumerate(lengths)]
        )

    attention = summed_log_probs(speech_run.model({**clips, "targets": best}, training=False))
    lm = summed_log_probs(no_lm_run.model({"targets": best}, training=False))
    expected = (attention + weight * lm) / length_penalty(lengths, 0.6).numpy()
    np.testing.assert_allclose(scores[:, 0], expected, atol=1e-4)


def test_fixed_shape_fusion_equals_the_dynamic_one(speech_run, no_lm_run, clips):
    """The fixed-shape search (XLA, the .tflite) with a fixed-length LM cache."""
    model = speech_run.model
    features = {k: tf.constant(v) for k, v in clips.items()}

    def search(fixed):
        memory, mask = model.encode(features, training=False)
        cache = model.initial_decode_cache(features, 12 if fixed else None, encoded=(memory, mask))
        fn = lambda ids, step, states: model.decode_step(ids[:, -1], step, states)
        lm = language_model_scorer(no_lm_run.output_dir, model, 2, 12 if fixed else None)
        scorers = [
            WeightedScorer(DecoderScorer(fn, cache, use_fixed_shapes=fixed), 1.0),
            WeightedScorer(lm, 1.0),
        ]
        return scored_beam_search(
            scorers, tf.zeros([2], tf.int32), 2, 12, 258, 0.6, use_fixed_shapes=fixed
        )

    ids, scores = tf.function(lambda: search(False))()
    fixed_ids, fixed_scores = tf.function(lambda: search(True), jit_compile=True)()
    np.testing.assert_array_equal(fixed_ids.numpy(), ids.numpy())
    np.testing.assert_allclose(fixed_scores.numpy(), scores.numpy(), atol=1e-4)


def test_an_lm_that_cannot_be_fused_is_one_sentence(speech_run, no_lm_run, no_ngram_dir, tmp_path):
    with pytest.raises(ValueError, match="holds no t2t-lite-trainer run"):
        load_language_model(str(tmp_path))
    with pytest.raises(ValueError, match="which has inputs; shallow fusion needs a language model"):
        load_language_model(speech_run.output_dir)
    other_vocabulary = SimpleNamespace(target_vocab_size=7)
    with pytest.raises(ValueError, match="LM over 258 target ids, the recognizer has 7"):
        load_language_model(no_lm_run.output_dir, other_vocabulary)
    # A word n-gram spells any vocabulary from its tokens' text, which it needs.
    with pytest.raises(ValueError, match="needs the recognizer's token surfaces"):
        language_model_scorer(no_ngram_dir, other_vocabulary, 1)
    with pytest.raises(ValueError, match="lm_weight=0.5 needs lm_dir"):
        DecodeConfig.parse("lm_weight=0.5")
    with pytest.raises(ValueError, match="lm_weight must be >= 0"):
        DecodeConfig.parse("lm_weight=-1.0")
    with pytest.raises(ValueError, match="lm_weight needs a beam search"):
        DecodeConfig.parse(f"ctc_weight=1.0,lm_dir={no_lm_run.output_dir},lm_weight=0.5").for_model(
            speech_run.model
        )


def test_the_trainer_evaluation_checks_its_lm_before_training(speech_run, tmp_path):
    """An eval decode with an LM that is not there fails when the evaluator
    is built, not at the first evaluation."""
    with pytest.raises(ValueError, match="holds no t2t-lite-trainer run"):
        DecodeEvaluator(
            speech_run.model,
            speech_run.run_config,
            speech_run.problem,
            str(tmp_path),
            f"lm_dir={tmp_path},lm_weight=0.5",
        )
