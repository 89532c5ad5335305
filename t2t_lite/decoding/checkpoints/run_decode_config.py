"""A run's decode settings, settled once where a command starts.

`DecodeConfig` is typed and checked without touching files; what the
settings name on disk is resolved here, in the layer that owns the run's
files: the run's word-confidence calibration for the checkpoint, and the
language model `lm_dir` names (loaded once, its vocabulary checked against
the recognizer's). The decoder and both exporters call it; the trainer's
evaluation, which has no calibration, checks its LM alone.
"""

from __future__ import annotations

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.language_model import load_language_model
from t2t_lite.decoding.timing.word_confidence import with_run_calibration


def decode_config_for_run(
    decode_config: DecodeConfig, model, output_dir: str, checkpoint: str
) -> tuple[DecodeConfig, str | None]:
    """`decode_config` for `model` of the run in `output_dir` at `checkpoint`.

    Returns:
        `(config, note)`: `config.for_model(model)` with the run's calibration
        (`with_run_calibration`); the note (one sentence, or None) says why a
        stored calibration was not applied.

    Raises:
        ValueError: settings the model cannot honour, a bad calibration, or
            an LM that cannot be fused (each one sentence).
    """
    config, note = with_run_calibration(decode_config, output_dir, checkpoint)
    config = config.for_model(model)
    check_language_model(config, model)
    return config, note


def check_language_model(decode_config: DecodeConfig, model) -> None:
    """Loads (once) and checks the LM `decode_config` fuses with `model`, if any.

    Raises:
        ValueError: no LM run at `lm_dir`, or one that cannot be fused (one sentence).
    """
    if decode_config.lm_weight > 0:
        load_language_model(decode_config.lm_dir, model)
