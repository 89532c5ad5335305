"""The streaming encoder: chunks with caches give what the whole utterance
gives under the chunk mask, and the chunk mask keeps the future out."""

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.hparam import create_hparams
from t2t_lite.streaming.encoder import StreamingEncoder, front_end_outputs_ready
from tests.helpers import NO_DROPOUT

# Two causal layers with conv_relu_conv FFNs: caches of keys, values and conv inputs.
STREAMING = (
    "hidden_size=16,filter_size=32,num_heads=2,num_hidden_layers=2,speech_front_end_filters=4,"
    f"ffn_layer=conv_relu_conv,use_dynamic_chunk=True,{NO_DROPOUT}"
)


@pytest.fixture(scope="module")
def model():
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", STREAMING, problem)
    built = registry.model("transformer").from_hparams(hparams, **problem.model_kwargs(None))
    rng = np.random.default_rng(0)
    features = rng.normal(size=(1, 40, 80, 3)).astype(np.float32)
    built({"inputs": features, "targets": np.ones((1, 3), np.int32)})
    return built


def features_of(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(1, frames, 80, 3)).astype(np.float32)


@pytest.mark.parametrize(
    ("frames", "chunk", "left"),
    [(97, 4, 0), (97, 1, 0), (61, 100, 0), (30, 3, 0), (97, 4, 2), (97, 1, 3), (30, 3, 1)],
)
def test_chunks_with_caches_equal_the_chunk_masked_whole(model, frames, chunk, left):
    """Chunk by chunk equals the whole utterance under the chunk mask; with
    a left context limit, every layer's cache holds `left` chunks at most."""
    features = features_of(frames, frames + chunk)
    whole, mask = model.encode(
        {"inputs": features, "inputs_length": np.array([frames])},
        chunk_frames=chunk,
        left_chunks=left,
    )
    encoder = StreamingEncoder(model, chunk, left)
    state, pieces, cached = encoder.initial_state(), [], []
    for stable in range(0, frames, 13):  # audio arrives in uneven pieces
        memory, state = encoder.advance(features[:, :stable], stable, state)
        pieces.append(np.asarray(memory))
        cached.append(max(c["keys"].shape[2] for c in state.layer_caches))
    memory, state = encoder.advance(features, frames, state, final=True)
    streamed = np.concatenate(pieces + [np.asarray(memory)], axis=1)
    assert streamed.shape == np.asarray(whole).shape and state.frames_done == mask.shape[1]
    np.testing.assert_allclose(streamed, np.asarray(whole), atol=2e-5)
    if left:
        assert max(cached) == left * chunk < state.frames_done


def test_a_left_context_limit_changes_what_it_should(model):
    """Limited left context is not full context: a chunk far enough back no
    longer reaches the last frames, and a limit as long as the utterance is
    unlimited."""
    features = features_of(97, 5)
    inputs = {"inputs": features, "inputs_length": np.array([97])}
    unlimited, _ = model.encode(inputs, chunk_frames=4)
    limited, _ = model.encode(inputs, chunk_frames=4, left_chunks=2)
    long_enough, _ = model.encode(inputs, chunk_frames=4, left_chunks=6)
    # Frames 0-11 (chunks 0-2) see every chunk before theirs either way.
    np.testing.assert_allclose(np.asarray(limited)[:, :12], np.asarray(unlimited)[:, :12])
    assert not np.allclose(np.asarray(limited)[:, 12:], np.asarray(unlimited)[:, 12:])
    np.testing.assert_array_equal(np.asarray(long_enough), np.asarray(unlimited))


def test_a_chunk_never_reads_the_future(model):
    """Changing frames after a chunk's last input frame changes no output of it."""
    features = features_of(80, 1)
    changed = features.copy()
    changed[:, 47:] += 3.0  # output frame 8 reads input frames 32..46
    lengths = np.array([80])
    before, _ = model.encode({"inputs": features, "inputs_length": lengths}, chunk_frames=3)
    after, _ = model.encode({"inputs": changed, "inputs_length": lengths}, chunk_frames=3)
    # Chunks of 3 output frames: 0-2, 3-5, 6-8 read input frames up to 4*8+14 = 46.
    np.testing.assert_allclose(np.asarray(before)[:, :9], np.asarray(after)[:, :9], atol=1e-6)
    assert not np.allclose(np.asarray(before)[:, 9:], np.asarray(after)[:, 9:])
    # Full context: every frame sees the change.
    full, _ = model.encode({"inputs": features, "inputs_length": lengths})
    full_changed, _ = model.encode({"inputs": changed, "inputs_length": lengths})
    assert not np.allclose(np.asarray(full)[:, :9], np.asarray(full_changed)[:, :9])


def test_front_end_outputs_are_ready_when_their_last_frame_is():
    assert [front_end_outputs_ready(n) for n in (0, 14, 15, 18, 19, 100)] == [0, 0, 1, 1, 2, 22]


def test_a_model_trained_without_chunks_is_refused():
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", "hidden_size=16,num_heads=2", problem)
    plain = registry.model("transformer").from_hparams(hparams, **problem.model_kwargs(None))
    with pytest.raises(ValueError, match="use_dynamic_chunk=True"):
        StreamingEncoder(plain, 4)
