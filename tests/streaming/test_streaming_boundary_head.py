"""The word boundary head over a stream gives the head's probabilities over
the whole utterance, whatever the chunks."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.speech_front_end import SpeechFrontEnd
from t2t_lite.layers.word_boundary_head import WordBoundaryHead
from t2t_lite.streaming.streaming_boundary_head import StreamingBoundaryHead


@pytest.fixture(scope="module")
def head():
    head = WordBoundaryHead(hidden=8, kernel_size=5)
    rng = np.random.default_rng(0)
    head(np.zeros([1, 4, 6, 3], np.float32), np.zeros([1, 1, 16], np.float32))
    for weight in head.weights:  # trained-looking weights: no bias is zero
        weight.assign(rng.normal(0, 0.5, weight.shape).astype(np.float32))
    return head


@pytest.mark.parametrize("frames, steps", [(157, 9), (40, 3), (19, 2)])
def test_chunks_give_the_whole_utterances_probabilities(head, frames, steps):
    rng = np.random.default_rng(frames)
    features = rng.normal(size=[1, frames, 6, 3]).astype(np.float32)
    encoder_frames = int(SpeechFrontEnd.output_length(frames))
    memory = rng.normal(size=[1, encoder_frames, 16]).astype(np.float32)
    expected = tf.sigmoid(head(features, memory)).numpy()

    streaming = StreamingBoundaryHead(head)
    state, outputs = streaming.initial_state(), []
    # The encoder lags the features, as in a stream: chunk i has seen
    # features[:f] and emitted memory[:t].
    cuts = np.linspace(0, frames, steps + 1).astype(int)[1:]
    for f in cuts:
        t = max(int(SpeechFrontEnd.output_length(f)) - 3, 0)
        done = int(state["boundary_frames"])
        probs, state = streaming.step(features[:, done:f], memory[:, :t], state)
        outputs.append(probs.numpy())
    done = int(state["boundary_frames"])
    probs, state = streaming.step(features[:, done:], memory, state, final=True)
    outputs.append(probs.numpy())
    assert sum(o.shape[1] for o in outputs[:-1]) > 0 or frames < 10  # most come before the end
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), expected, atol=1e-5)
    np.testing.assert_allclose(state["boundary_probs"].numpy(), expected, atol=1e-5)
