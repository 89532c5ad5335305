"""How long an input a trained model takes, and how longer ones are handled.

One rule, read by the decoder CLI, the in-process transcriber and the
SavedModel alike, so that a request the export refuses or splits is refused
or split the same way by `t2t-lite-decoder`:

- speech: a recording longer than `segment_seconds` is split at pauses into
  pieces (`long_form.split_recordings`) and transcribed whole; by default a
  piece is at most the training limit, `max_input_frames`, so no piece is
  longer than any utterance the model saw;
- text: an input of more than `max_input_tokens` tokens (`input_tokens`
  counts its EOS) is refused with a message, never cut.

Example:
>>> from t2t_lite.hparam import HParams
>>> hparams = HParams(max_input_seq_length=0, max_length=1650 * 80,
...                   audio_num_mel_bins=80, audio_frame_step=10.0)
>>> max_input_frames(hparams)
1650
"""

from __future__ import annotations

from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.hparam import HParams

# Limits used when the hparams set none: 30 s of audio, 256 text tokens.
DEFAULT_MAX_INPUT_FRAMES = 3000
DEFAULT_MAX_INPUT_TOKENS = 256


def max_input_frames(hparams: HParams) -> int:
    """The longest speech input the model reads at once, in frames.

    The training limits, so a served utterance is never longer than any the
    model saw.

    Args:
        hparams: the run's hparams.

    Returns:
        `max_input_seq_length` (frames), else `max_length` (T2T's frames x mel
        bins) in frames, else `DEFAULT_MAX_INPUT_FRAMES`.
    """
    if hparams.get("max_input_seq_length", 0) > 0:
        return hparams.max_input_seq_length
    if hparams.get("max_length", 0) > 0:
        return max(1, hparams.max_length // FeatureConfig.from_hparams(hparams).num_mel_bins)
    return DEFAULT_MAX_INPUT_FRAMES


def max_input_tokens(hparams: HParams) -> int:
    """The longest text input the model takes, in tokens including EOS.

    Args:
        hparams: the run's hparams.

    Returns:
        `max_input_seq_length`, else `max_length` (at least 2: room for a
        token and EOS), else `DEFAULT_MAX_INPUT_TOKENS`.
    """
    for name in ("max_input_seq_length", "max_length"):
        if hparams.get(name, 0) > 0:
            return max(2, hparams.get(name))
    return DEFAULT_MAX_INPUT_TOKENS


def input_tokens(num_ids):
    """An input's length as `max_input_tokens` counts it: its ids and the EOS
    appended to them (an int for an int, a tensor for a tensor)."""
    return num_ids + 1


def segment_seconds(hparams: HParams, decode_config: DecodeConfig) -> float:
    """The longest piece of a recording decoded at once.

    Args:
        hparams: the run's hparams (length limits, `audio_frame_step`).
        decode_config: decode hparams.

    Returns:
        The decode hparam `segment_seconds`, else `max_input_frames` in seconds.
    """
    if decode_config.segment_seconds > 0:
        return float(decode_config.segment_seconds)
    return max_input_frames(hparams) * FeatureConfig.from_hparams(hparams).frame_seconds
