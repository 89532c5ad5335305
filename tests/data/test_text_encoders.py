"""Text encoders reserve PAD 0 and EOS 1 and round-trip text."""

import pytest
import tensorflow as tf

from t2t_lite.data.text_encoders import (
    EOS_ID,
    ByteTextEncoder,
    IntegerEncoder,
    SentencePieceEncoder,
    train_sentencepiece,
)
from t2t_lite.litert.vocabulary import Vocabulary


def test_byte_encoder_is_t2t_bytes_plus_two():
    encoder = ByteTextEncoder()
    assert encoder.vocab_size == 258
    assert encoder.encode("hi") == [ord("h") + 2, ord("i") + 2]
    text = "héllo wörld"
    assert encoder.decode(encoder.encode(text) + [EOS_ID, 50, 60]) == text
    assert encoder.decode([0, 0] + encoder.encode("a")) == "a"


def test_integer_encoder():
    encoder = IntegerEncoder(3)
    assert encoder.vocab_size == 5
    assert encoder.encode("2 0 1") == [4, 2, 3]
    assert encoder.decode([4, 2, 3, EOS_ID, 4]) == "2 0 1"
    with pytest.raises(ValueError, match="outside 0..2"):
        encoder.encode("3")


def test_sentencepiece_trains_and_reloads_by_path(tmp_path):
    texts = [f"the {w} sat on the mat with a {w}" for w in ["cat", "dog", "bird", "fish"]] * 50
    path = str(tmp_path / "spm.model")
    encoder = train_sentencepiece(texts, path, vocab_size=40)
    reloaded = SentencePieceEncoder(path)
    ids = reloaded.encode("the dog sat on the mat")
    assert ids == encoder.encode("the dog sat on the mat")
    assert min(ids) >= 2  # 0 and 1 stay PAD and EOS
    assert reloaded.decode(ids + [EOS_ID]) == "the dog sat on the mat"
    assert not list(tmp_path.glob("*.vocab"))  # nothing but the model is left behind
    with pytest.raises(FileNotFoundError, match="run t2t-lite-datagen"):
        SentencePieceEncoder(str(tmp_path / "missing.model"))


def test_token_surfaces_join_to_the_decoded_text(tmp_path):
    """Python's decoder, the on-device `Vocabulary` and the graph's `tf_decode`
    give one text."""
    texts = [f"the {w} sat on the mat with a {w}" for w in ["cat", "dog", "bird", "fish"]] * 50
    sentencepiece = train_sentencepiece(texts, str(tmp_path / "spm.model"), vocab_size=40)
    words = ("the dog sat on the mat", "a fish")
    for encoder, texts in ((ByteTextEncoder(), words), (sentencepiece, words),
                           (IntegerEncoder(3), ("1 0 2", "2"))):  # fmt: skip
        surfaces = encoder.token_surfaces()
        assert len(surfaces) == encoder.vocab_size and surfaces[:2] == [b"", b""]
        vocabulary = Vocabulary.from_encoder(encoder)  # the on-device detokenizer
        for text in texts:
            joined = b"".join(surfaces[i] for i in encoder.encode(text)).decode("utf-8")
            assert joined.strip() == encoder.decode(encoder.encode(text)) == text
            assert vocabulary.decode(encoder.encode(text) + [EOS_ID, 5]) == text
            in_graph = encoder.tf_decode(tf.constant([encoder.encode(text) + [EOS_ID, 5]]))
            assert in_graph.numpy()[0].decode("utf-8") == text
