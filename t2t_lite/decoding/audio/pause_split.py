"""The long-form rules (where a long recording is cut), and the cut in NumPy.

`long_form.py` applies these rules in TF ops, in the SavedModel and the
decoder; `numpy_piece_ends` applies the same rules with NumPy, for
on-device runners that carry no TensorFlow (`litert.litert_transcriber`). Both
read their constants and frame arithmetic from here, and a test checks that
they cut real recordings at the same samples.

The rules (see `long_form.py` for why):

1. 10 ms frames; the speech level is the 90th percentile frame energy; a
   pause is a run of at least `MIN_PAUSE_SECONDS` of frames `PAUSE_DB` below
   it, not at the start or end, cut in its middle;
2. a piece still longer than `segment_seconds` is cut at its quietest 100 ms
   (a moving average) within the last half of the allowed length.

Example:
>>> max_piece_samples(16000, 10.0)  # 1000 whole 10 ms frames and a partial one
160159
"""

from __future__ import annotations

import numpy as np

FRAME_SECONDS = 0.01
SMOOTH_FRAMES = 10  # 100 ms: a cut at the quietest region, not a dip inside a word
SPEECH_PERCENTILE = 0.9
MIN_PAUSE_SECONDS = 0.3
PAUSE_DB = 30.0


def frame_sizes(sample_rate: int, segment_seconds: float) -> tuple[int, int, int]:
    """The frame sizes of the rules: `(hop, max_frames, min_pause_frames)`.

    Samples per frame, the most frames in a piece, the fewest frames in a
    pause.
    """
    hop = int(round(FRAME_SECONDS * sample_rate))
    max_frames = max(2, int(segment_seconds / FRAME_SECONDS))
    min_pause_frames = max(1, int(round(MIN_PAUSE_SECONDS / FRAME_SECONDS)))
    return hop, max_frames, min_pause_frames


def max_piece_samples(sample_rate: int, segment_seconds: float) -> int:
    """The longest piece the rules make, in samples.

    `max_frames` whole frames and the partial frame at a recording's end (a
    recording this long is one piece).
    """
    hop, max_frames, _ = frame_sizes(sample_rate, segment_seconds)
    return max_frames * hop + hop - 1


def _frame_energy_db(waveform: np.ndarray, hop: int) -> np.ndarray:
    frames = waveform.size // hop
    framed = waveform[: frames * hop].reshape(frames, hop).astype(np.float32)
    energy = np.mean(np.square(framed), axis=1)
    return (10.0 * np.log(energy + 1e-10) / np.log(10.0)).astype(np.float32)


def _pause_centres(energy_db: np.ndarray, min_pause_frames: int, pause_db: float) -> np.ndarray:
    num_frames = energy_db.size
    level_index = int(np.float32(SPEECH_PERCENTILE) * np.float32(num_frames - 1))
    quiet = energy_db < np.sort(energy_db)[level_index] - pause_db
    change = np.concatenate([[True], quiet[1:] != quiet[:-1]])
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, num_frames))
    interior = (starts > 0) & (starts + lengths < num_frames)
    pause = quiet[starts] & interior & (lengths >= min_pause_frames)
    return (starts + lengths // 2)[pause]


def numpy_piece_ends(
    waveform: np.ndarray,
    sample_rate: int,
    segment_seconds: float,
) -> np.ndarray:
    """`long_form.piece_ends` in NumPy, for a whole recording `waveform`
    (float `[samples]`, no padding): the same arguments after it, the same
    ends, an int array `[pieces]` whose last is `waveform.size`."""
    waveform = np.asarray(waveform, np.float32).reshape(-1)
    hop, max_frames, min_pause_frames = frame_sizes(sample_rate, segment_seconds)
    num_frames = waveform.size // hop
    if num_frames <= max_frames:
        return np.array([waveform.size])
    energy = _frame_energy_db(waveform, hop)
    pauses = _pause_centres(energy, min_pause_frames, PAUSE_DB)
    # A centred moving average, padded with zeros as TF's "SAME" conv1d pads.
    before = (SMOOTH_FRAMES - 1) // 2
    padded = np.pad(energy, [before, SMOOTH_FRAMES - 1 - before])
    smooth = np.convolve(padded, np.full(SMOOTH_FRAMES, 1.0 / SMOOTH_FRAMES, np.float32), "valid")
    ends, start = [], 0
    while start < num_frames:
        later = pauses[pauses > start]
        next_pause = int(later[0]) if later.size else num_frames
        hi = min(start + max_frames, num_frames)
        lo = min(start + max_frames // 2, hi - 1)
        end = next_pause if next_pause - start <= max_frames else lo + int(np.argmin(smooth[lo:hi]))
        if next_pause >= num_frames and num_frames - start <= max_frames:
            end = num_frames
        ends.append(end)
        start = end
    # The last piece runs to the last sample, not to the last whole frame.
    return np.array([end * hop for end in ends[:-1]] + [waveform.size])
