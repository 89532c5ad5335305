"""t2t-lite's registered problems (installed as `t2t_lite.problems`).

Importing this package registers every problem; `t2t_lite.registry` does so
on its first lookup.
"""

from t2t_lite.problems import (  # noqa: F401
    algorithmic,
    language_models,
    librispeech,
    mini_librispeech,
    real_speech_mix,
    speechocean762,
    spoken_synth,
    translate,
)
