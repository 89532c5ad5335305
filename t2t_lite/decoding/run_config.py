"""What decoding reads of a trained run's hparams, typed once where a command starts.

The decoder, both exporters, the streaming recognizer and the trainer's
evaluator take a `RunConfig`, never the hparams: the run's audio front end
(`FeatureConfig`) and the length limits it was trained with. This builder
is the one place below `cli/` that reads those hparams by name
(`tests/test_config_ownership.py` holds every other module to it).

Example:
>>> from t2t_lite.hparam import HParams
>>> hparams = HParams(max_input_seq_length=0, max_length=1650 * 80,
...                   audio_num_mel_bins=80, audio_frame_step=10.0)
>>> RunConfig.from_hparams(hparams).max_input_frames
1650
"""

from __future__ import annotations

import dataclasses

from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.hparam import HParams

# Limits used when the hparams set none: 30 s of audio, 256 text tokens.
DEFAULT_MAX_INPUT_FRAMES = 3000
DEFAULT_MAX_INPUT_TOKENS = 256
# The hparams read here (T2T's length limits).
LIMIT_HPARAMS = ("max_input_seq_length", "max_length", "max_target_seq_length")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A trained run's settings as decoding reads them.

    Attributes:
        features: the audio front end (`FeatureConfig`).
        max_input_frames: the longest speech input the model reads at once,
            in feature frames: the training limit, so a served utterance is
            never longer than any the model saw.
        max_input_tokens: the longest text input, in tokens including EOS.
        max_target_length: hparam `max_target_seq_length` (0: none).
    """

    features: FeatureConfig
    max_input_frames: int = DEFAULT_MAX_INPUT_FRAMES
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
    max_target_length: int = 0

    @classmethod
    def from_hparams(cls, hparams: HParams) -> RunConfig:
        """The settings `hparams` give.

        `max_input_frames` is `max_input_seq_length`, else T2T's `max_length`
        (frames x mel bins) in frames, else `DEFAULT_MAX_INPUT_FRAMES`;
        `max_input_tokens` is `max_input_seq_length`, else `max_length` (at
        least 2: room for a token and EOS), else `DEFAULT_MAX_INPUT_TOKENS`.
        """
        features = FeatureConfig.from_hparams(hparams)
        input_limit = hparams.get("max_input_seq_length", 0)
        max_length = hparams.get("max_length", 0)
        if input_limit > 0:
            frames, tokens = input_limit, max(2, input_limit)
        elif max_length > 0:
            frames, tokens = max(1, max_length // features.num_mel_bins), max(2, max_length)
        else:
            frames, tokens = DEFAULT_MAX_INPUT_FRAMES, DEFAULT_MAX_INPUT_TOKENS
        target_limit = hparams.get("max_target_seq_length", 0)
        return cls(features, frames, tokens, max(int(target_limit), 0))
