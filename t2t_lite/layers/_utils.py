"""Private helpers shared by the layers (dropout with broadcast dims, initializers)."""

from collections.abc import Sequence

import keras

from t2t_lite.layers.dropout import Dropout


def validate_broadcast_dims(
    broadcast_dims: Sequence[int], rank: int, owner: str
) -> tuple[int, ...]:
    """Checks `broadcast_dims` against a tensor rank; returns them non-negative.

    T2T's `dropout_with_broadcast_dims` shares one dropout mask along these
    dimensions (e.g. the same mask for every position of a sequence), which
    saves memory and acts like "spatial" dropout.
    """
    dims = []
    for dim in broadcast_dims:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise ValueError(f"{owner}: dropout_broadcast_dims must be integers, got {dim!r}.")
        if not -rank <= dim < rank:
            raise ValueError(
                f"{owner}: dropout_broadcast_dims entry {dim} is out of range "
                f"for a rank-{rank} tensor."
            )
        dims.append(dim % rank)
    return tuple(sorted(set(dims)))


def make_dropout(
    rate: float,
    broadcast_dims: Sequence[int],
    rank: int,
    dtype_policy,
    name: str,
) -> Dropout | None:
    """Returns a Dropout whose mask is shared along `broadcast_dims`, or None.

    Keras fills `None` entries of `noise_shape` from the input's shape at call
    time, so this works with dynamic batch and length.
    """
    if rate == 0.0:
        return None
    noise_shape = None
    if broadcast_dims:
        noise_shape = tuple(1 if i in broadcast_dims else None for i in range(rank))
    return Dropout(rate, noise_shape=noise_shape, dtype=dtype_policy, name=name)


def validate_rate(rate: float, owner: str, arg: str = "dropout") -> float:
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"{owner}: {arg} must be in [0, 1), got {rate!r}.")
    return float(rate)


def clone_initializer(initializer):
    """Returns a fresh copy of a Keras initializer.

    Each sublayer gets its own instance so that a seeded initializer does not
    hand identical values to several kernels.
    """
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
