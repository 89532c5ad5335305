"""The pieces of the serving graph: in-graph text encoders, return_beams."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.text_encoders import ByteTextEncoder, IntegerEncoder
from t2t_lite.decoding.checkpoints import trained_model
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.hparam import create_hparams
from t2t_lite.serving.serving_module import ServingModule
from tests.helpers import TINY_TRANSFORMER

TEXTS = ["hello world", "", "héllo ✓", "a"]
# Rows with EOS mid-row, padding inside and after, and invalid UTF-8.
BYTE_IDS = [
    [106, 107, 1, 50, 51],
    [0, 106, 0, 107, 0],
    [1, 106, 106, 106, 106],
    [228 + 2, 130 + 2, 1, 0, 0],  # a truncated 3-byte sequence
    [99, 255 + 2, 100, 0, 0],  # "a", an invalid byte, "b"
]


def test_byte_encoder_graph_ops_equal_python():
    encoder = ByteTextEncoder()
    encoded = tf.function(encoder.tf_encode)(tf.constant(TEXTS))
    assert encoded.dtype == tf.int32
    assert encoded.to_list() == [encoder.encode(text) for text in TEXTS]
    decoded = tf.function(encoder.tf_decode)(tf.constant(BYTE_IDS))
    expected = [encoder.decode(row).encode("utf-8") for row in BYTE_IDS]
    assert decoded.numpy().tolist() == expected


def test_integer_encoder_graph_ops_equal_python():
    encoder = IntegerEncoder(3)
    texts = ["1 0 2", "", "  2\t0 ", "01 1"]
    encoded = tf.function(encoder.tf_encode)(tf.constant(texts))
    assert encoded.to_list() == [encoder.encode(text) for text in texts]
    ids = [[3, 2, 4, 1, 3], [0, 2, 0, 0, 0], [1, 2, 2, 2, 2]]
    decoded = tf.function(encoder.tf_decode)(tf.constant(ids)).numpy().tolist()
    assert decoded == [encoder.decode(row).encode() for row in ids]


@pytest.mark.parametrize("text", ["1 3", "x", "-1", "1,0", "9999999999"])
def test_integer_encoder_graph_op_rejects_bad_symbols(text):
    encoder = IntegerEncoder(3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="space-separated symbols 0..2"):
        tf.function(encoder.tf_encode)(tf.constant([text]))


def test_return_beams_gives_every_beam_best_first():
    problem = registry.problem("algorithmic_reverse_binary40")
    hparams = create_hparams("transformer_tiny", TINY_TRANSFORMER, problem)
    model = trained_model.build_model(problem, hparams, "transformer", None)
    encoders = problem.feature_encoders(None)
    beams = ServingModule(
        model,
        problem,
        RunConfig.from_hparams(hparams),
        DecodeConfig.parse("beam_size=3,return_beams=True"),
        encoders,
    ).serve(tf.constant(["1 0", "0 1 1"]))
    best = ServingModule(
        model, problem, RunConfig.from_hparams(hparams), DecodeConfig.parse("beam_size=3"), encoders
    ).serve(tf.constant(["1 0", "0 1 1"]))
    assert beams["outputs"].shape == beams["scores"].shape == (2, 3)
    assert np.all(np.diff(beams["scores"].numpy(), axis=1) <= 0)
    np.testing.assert_array_equal(beams["outputs"][:, 0], best["outputs"])
    np.testing.assert_allclose(beams["scores"][:, 0], best["scores"], rtol=1e-6)
