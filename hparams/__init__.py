"""t2t-lite's registered hparams sets (installed as `t2t_lite.hparams`).

Importing this package registers every set; `t2t_lite.registry` does so on
its first lookup.
"""

from t2t_lite.hparams import (  # noqa: F401
    algorithmic,
    language_models,
    librispeech,
    real_speech,
    transformer,
)
