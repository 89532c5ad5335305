"""Text encoders: bytes (T2T's speech targets), integer symbols, SentencePiece.

Every encoder reserves T2T's ids: 0 is padding and 1 is end-of-sequence.
`encode` does not append EOS (problems do, when they write targets);
`decode` stops at the first EOS and skips padding.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

PAD_ID = 0
EOS_ID = 1
NUM_RESERVED_IDS = 2


class TextEncoder:
    """Maps text to ids and back. Subclasses set `vocab_size`."""

    vocab_size: int

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement encode")

    def decode_ids(self, ids: Iterable[int]) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement decode_ids")

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids` up to the first EOS, padding skipped."""
        kept = []
        for token in ids:
            token = int(token)
            if token == EOS_ID:
                break
            if token != PAD_ID:
                kept.append(token)
        return self.decode_ids(kept)


class ByteTextEncoder(TextEncoder):
    """UTF-8 bytes shifted by 2: T2T's `ByteTextEncoder`, 258 ids.

    Byte-level targets are T2T's choice for speech recognition: no vocabulary
    to build, every transcript encodable.

    Example:
    >>> ByteTextEncoder().encode("hi")
    [106, 107]
    """

    vocab_size = 256 + NUM_RESERVED_IDS

    def encode(self, text: str) -> list[int]:
        return [byte + NUM_RESERVED_IDS for byte in text.encode("utf-8")]

    def decode_ids(self, ids: Iterable[int]) -> str:
        data = bytes(i - NUM_RESERVED_IDS for i in ids if i >= NUM_RESERVED_IDS)
        return data.decode("utf-8", errors="replace")


class IntegerEncoder(TextEncoder):
    """Space-separated integer symbols `0..num_symbols-1` shifted by 2.

    T2T's algorithmic problems write their sequences this way.

    Example:
    >>> IntegerEncoder(2).encode("1 0 1")
    [3, 2, 3]
    """

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


class SentencePieceEncoder(TextEncoder):
    """A SentencePiece model with pad 0, EOS 1, unk 2 (see `train_sentencepiece`).

    Args:
        model_path: the `.model` file written by `train_sentencepiece`.
    """

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
