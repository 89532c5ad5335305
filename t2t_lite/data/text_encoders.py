"""Text encoders: bytes (T2T's speech targets), integer symbols, SentencePiece.

Every encoder reserves T2T's ids: 0 is padding and 1 is end-of-sequence.
`encode` does not append EOS (problems do, when they write targets);
`decode` stops at the first EOS and skips padding.

Every encoder detokenizes inside a TF graph (`tf_decode`: its
`token_surfaces` gathered and joined), so an exported SavedModel turns ids
into text by itself, SentencePiece's too. `ByteTextEncoder` and
`IntegerEncoder` also tokenize there (`tf_encode`); SentencePiece's
tokenizer would need tensorflow-text's custom ops.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

import tensorflow as tf

from t2t_lite.data.reserved_ids import EOS_ID, NUM_RESERVED_IDS, PAD_ID, ids_before_eos


def _ids_before_eos(ids: tf.Tensor) -> tf.RaggedTensor:
    """`[batch, length]` ids -> ragged ids up to the first EOS, padding skipped."""
    ids = tf.convert_to_tensor(ids)
    before_eos = tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1) == 0
    return tf.ragged.boolean_mask(ids, before_eos & tf.not_equal(ids, PAD_ID))


class TextEncoder:
    """Maps text to ids and back. Subclasses set `vocab_size`.

    Subclasses that can tokenize inside a TF graph implement `tf_encode` and
    set `supports_tf_encode = True`; detokenizing there needs only
    `token_surfaces`.
    """

    vocab_size: int
    supports_tf_encode: bool = False
    # Whether `token_surfaces` carry a word's space before it, so that the
    # text's first space is dropped (SentencePiece's pieces, integer symbols).
    surfaces_lead_with_space: bool = False

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement encode")

    def decode_ids(self, ids: Iterable[int]) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement decode_ids")

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids` up to the first EOS, padding skipped."""
        return self.decode_ids(ids_before_eos(ids))

    def token_surfaces(self) -> list[bytes]:
        """The UTF-8 text each id stands for: `vocab_size` entries, b"" for reserved ids.

        Decoding a sequence joins its ids' surfaces, so a space in a surface is
        a word boundary (word timestamps read this).
        """
        raise NotImplementedError(f"{type(self).__name__} does not map ids to text pieces")

    def tf_encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """`encode` as TF ops: string `[batch]` -> int32 ids `[batch, (length)]`, no EOS."""
        raise NotImplementedError(f"{type(self).__name__} cannot encode inside a TF graph")

    def tf_decode(self, ids: tf.Tensor) -> tf.Tensor:
        """`decode` as TF ops: int ids `[batch, length]` -> string `[batch]`.

        Each row stops at its first EOS and skips padding, like `decode`.

        Example:
        >>> ByteTextEncoder().tf_decode(tf.constant([[106, 107, 1, 50]])).numpy()
        array([b'hi'], dtype=object)
        """
        return self._tf_decode_ids(tf.cast(_ids_before_eos(ids), tf.int32))

    def _tf_decode_ids(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """`decode_ids` as TF ops: ragged int32 ids (no EOS, no PAD) -> string `[batch]`.

        The ids' surfaces joined, as the on-device `Vocabulary` joins them.
        """
        text = tf.strings.reduce_join(tf.gather(tf.constant(self.token_surfaces()), ids), axis=1)
        if self.surfaces_lead_with_space:  # the first word's space is not text
            text = tf.strings.regex_replace(text, "^ +", "")
        # Python's errors="replace": each invalid UTF-8 sequence becomes U+FFFD.
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")


class ByteTextEncoder(TextEncoder):
    """UTF-8 bytes shifted by 2: T2T's `ByteTextEncoder`, 258 ids.

    Byte-level targets are T2T's choice for speech recognition: no vocabulary
    to build, every transcript encodable.

    Example:
    >>> ByteTextEncoder().encode("hi")
    [106, 107]
    """

    vocab_size = 256 + NUM_RESERVED_IDS
    supports_tf_encode = True

    def encode(self, text: str) -> list[int]:
        return [byte + NUM_RESERVED_IDS for byte in text.encode("utf-8")]

    def decode_ids(self, ids: Iterable[int]) -> str:
        data = bytes(i - NUM_RESERVED_IDS for i in ids if i >= NUM_RESERVED_IDS)
        return data.decode("utf-8", errors="replace")

    def token_surfaces(self) -> list[bytes]:
        return [b""] * NUM_RESERVED_IDS + [bytes([byte]) for byte in range(256)]

    def tf_encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        def byte_ids(single_bytes: tf.Tensor) -> tf.Tensor:
            # One byte per string, so decode_raw gives [bytes, 1] (or [0, 0]).
            values = tf.reshape(tf.io.decode_raw(single_bytes, tf.uint8), [-1])
            return tf.cast(values, tf.int32) + NUM_RESERVED_IDS

        strings = tf.convert_to_tensor(strings, tf.string)
        return tf.ragged.map_flat_values(byte_ids, tf.strings.bytes_split(strings))


class IntegerEncoder(TextEncoder):
    """Space-separated integer symbols `0..num_symbols-1` shifted by 2.

    T2T's algorithmic problems write their sequences this way.

    Example:
    >>> IntegerEncoder(2).encode("1 0 1")
    [3, 2, 3]
    """

    supports_tf_encode = True
    surfaces_lead_with_space = True

    def __init__(self, num_symbols: int):
        self.num_symbols = num_symbols
        self.vocab_size = num_symbols + NUM_RESERVED_IDS

    def encode(self, text: str) -> list[int]:
        ids = []
        for token in text.split():
            value = int(token)
            if not 0 <= value < self.num_symbols:
                raise ValueError(f"symbol {value} is outside 0..{self.num_symbols - 1}.")
            ids.append(value + NUM_RESERVED_IDS)
        return ids

    def decode_ids(self, ids: Iterable[int]) -> str:
        return " ".join(str(i - NUM_RESERVED_IDS) for i in ids)

    def token_surfaces(self) -> list[bytes]:
        symbols = [f" {value}".encode() for value in range(self.num_symbols)]
        return [b""] * NUM_RESERVED_IDS + symbols

    def tf_encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """Like `encode`, but a token that is not a symbol `0..num_symbols-1`
        fails the graph with an InvalidArgumentError naming the allowed range."""
        tokens = tf.strings.split(tf.convert_to_tensor(strings, tf.string))
        # Digits only, at most 9 of them: the int32 conversion cannot fail.
        is_number = tf.strings.regex_full_match(tokens.flat_values, "[0-9]{1,9}")
        values = tf.strings.to_number(tf.where(is_number, tokens.flat_values, "0"), tf.int32)
        valid = tf.reduce_all(is_number & (values < self.num_symbols))
        check = tf.debugging.Assert(
            valid,
            [f"inputs must be space-separated symbols 0..{self.num_symbols - 1}"],
        )
        with tf.control_dependencies([check]):
            values = tf.identity(values) + NUM_RESERVED_IDS
        return tokens.with_flat_values(values)


class SentencePieceEncoder(TextEncoder):
    """A SentencePiece model with pad 0, EOS 1, unk 2 (see `train_sentencepiece`).

    Args:
        model_path: the `.model` file written by `train_sentencepiece`.
    """

    surfaces_lead_with_space = True

    def __init__(self, model_path: str):
        import sentencepiece  # optional dependency: the [audio] / [test] extras

        if not os.path.exists(model_path):
            raise FileNotFoundError(
                f"SentencePiece model {model_path} does not exist; run t2t-lite-datagen "
                "for this problem first."
            )
        self.model_path = model_path
        self._processor = sentencepiece.SentencePieceProcessor(model_file=model_path)
        if self._processor.pad_id() != PAD_ID or self._processor.eos_id() != EOS_ID:
            raise ValueError(f"{model_path} must use pad id 0 and EOS id 1.")
        self.vocab_size = self._processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return list(self._processor.encode(text))

    def decode_ids(self, ids: Iterable[int]) -> str:
        return self._processor.decode(list(ids))

    def token_surfaces(self) -> list[bytes]:
        # SentencePiece writes a word's leading space as U+2581 in its pieces.
        processor = self._processor
        return [
            b""
            if processor.is_control(i) or processor.is_unknown(i)
            else processor.id_to_piece(i).replace("\u2581", " ").encode("utf-8")
            for i in range(self.vocab_size)
        ]


def train_sentencepiece(
    texts: Iterable[str], model_path: str, vocab_size: int, model_type: str = "unigram"
) -> SentencePieceEncoder:
    """Trains a SentencePiece model on `texts` and writes it to `model_path`.

    The model is written under a temporary name and renamed, so an
    interrupted run never leaves a half-written vocabulary behind.
    """
    import sentencepiece

    directory = os.path.dirname(os.path.abspath(model_path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        corpus = os.path.join(scratch, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as handle:
            for text in texts:
                handle.write(text.replace("\n", " ") + "\n")
        prefix = os.path.join(scratch, "spm")
        sentencepiece.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=prefix,
            vocab_size=vocab_size,
            model_type=model_type,
            pad_id=PAD_ID,
            eos_id=EOS_ID,
            unk_id=2,
            bos_id=-1,
            character_coverage=1.0,
            hard_vocab_limit=False,
            minloglevel=2,
        )
        os.replace(prefix + ".model", model_path)
    return SentencePieceEncoder(model_path)
