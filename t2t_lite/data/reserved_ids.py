"""T2T's reserved ids, shared by every vocabulary: 0 pads, 1 ends a sequence.

They live apart from `text_encoders` (which imports TensorFlow for its
in-graph encoders) so that the model, which runs on any Keras backend, and
the on-device detokenizer can read them without TensorFlow.

Example:
>>> ids_before_eos([5, 0, 6, 1, 7])  # padding skipped, nothing after EOS
[5, 6]
"""

from collections.abc import Iterable

PAD_ID = 0
EOS_ID = 1
NUM_RESERVED_IDS = 2


def is_label(ids):
    """Elementwise: whether a CTC best-path id is a label, not its blank or EOS.

    The blank is the padding id. NumPy arrays and tensors alike.
    """
    return (ids != PAD_ID) & (ids != EOS_ID)


def ids_before_eos(ids: Iterable[int]) -> list[int]:
    """The ids of a sequence as text reads them: up to its first EOS, padding skipped."""
    kept = []
    for token in ids:
        token = int(token)
        if token == EOS_ID:
            break
        if token != PAD_ID:
            kept.append(token)
    return kept
