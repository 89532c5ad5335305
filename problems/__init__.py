"""t2t-lite's registered problems (installed as `t2t_lite.problems`).

Importing this package registers every problem; `t2t_lite.registry` does so
on its first lookup.
"""

from t2t_lite.problems import algorithmic, librispeech, spoken_synth, translate  # noqa: F401
