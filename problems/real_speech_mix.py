"""`real_speech_mix`: one recognizer trained on every corpus t2t-lite reads.

    t2t-lite-datagen --problem=real_speech_mix --data_dir=$DATA --tmp_dir=$RAW
    t2t-lite-trainer --problem=real_speech_mix \
                     --hparams_set=transformer_speech_medium_real_mix ...
    t2t-lite-decoder --output_dir=$OUT    # each member's test, one line each

Members (all lower-case byte targets): Mini LibriSpeech's readers
(`mini_librispeech`, 4.0 h of training speech), speechocean762's
Mandarin-speaking children and adults (2.7 h) and the built-in eSpeak NG
corpus (`spoken_synth`, 2.6 h). Weights are shares of training examples;
the defaults give LibriSpeech about 57% of the audio heard, speechocean762
34% and the built-in corpus 10% (their utterances average 12.7 s, 4.2 s and
1.8 s).
"""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.data.mixed_problem import MixedProblem


@registry.register_problem
class RealSpeechMix(MixedProblem):
    """Mini LibriSpeech + speechocean762 + the built-in corpus (module docstring)."""

    members = ("mini_librispeech", "speechocean762", "spoken_synth")
    weights = (0.25, 0.45, 0.3)
