"""How long an input a trained model takes, and how longer ones are handled.

One rule, read by the decoder CLI, the in-process transcriber and the
SavedModel alike, so that a request the export refuses or splits is refused
or split the same way by `t2t-lite-decoder`:

- speech: a recording longer than `segment_seconds` is split at pauses into
  pieces (`long_form.split_recordings`) and transcribed whole; by default a
  piece is at most the training limit, `RunConfig.max_input_frames`, so no
  piece is longer than any utterance the model saw;
- text: an input of more than `RunConfig.max_input_tokens` tokens
  (`input_tokens` counts its EOS) is refused with a message, never cut.
"""

from __future__ import annotations

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig


def input_tokens(num_ids):
    """An input's length as `max_input_tokens` counts it: its ids and the EOS after them.

    An int for an int, a tensor for a tensor.
    """
    return num_ids + 1


def segment_seconds(run_config: RunConfig, decode_config: DecodeConfig) -> float:
    """The longest piece of a recording decoded at once.

    Args:
        run_config: the run's length limits and frame step.
        decode_config: decode hparams.

    Returns:
        The decode hparam `segment_seconds`, else `max_input_frames` in seconds.
    """
    if decode_config.segment_seconds > 0:
        return float(decode_config.segment_seconds)
    return run_config.max_input_frames * run_config.features.frame_seconds
