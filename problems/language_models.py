"""Language models of the speech corpora's transcripts, for shallow fusion.

    t2t-lite-datagen --problem=languagemodel_speechocean762 --data_dir=$DATA --tmp_dir=$RAW
    t2t-lite-trainer --problem=languagemodel_speechocean762 --hparams_set=transformer_lm_small \\
                     --data_dir=$DATA --output_dir=$LM --train_steps=3000
    t2t-lite-decoder --problem=speechocean762 ... --decode_hparams=lm_dir=$LM,lm_weight=0.3

Each shares its speech problem's byte vocabulary. The transcript LMs train on
their problem's training transcripts only (`TranscriptLanguageModelProblem`);
`languagemodel_mini_librispeech_books` on the books LibriSpeech's readers read
from, with the held-out readers' books left out (`BookTextLanguageModelProblem`):

    t2t-lite-datagen --problem=languagemodel_mini_librispeech_books --data_dir=$DATA --tmp_dir=$RAW
"""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.data.book_lm_problem import BookTextLanguageModelProblem
from t2t_lite.data.transcript_lm_problem import TranscriptLanguageModelProblem


@registry.register_problem
class LanguagemodelSpeechocean762(TranscriptLanguageModelProblem):
    """speechocean762's transcripts (its dev: the 10 dev speakers' sentences)."""

    speech_problem = "speechocean762"


@registry.register_problem
class LanguagemodelSpokenSynth(TranscriptLanguageModelProblem):
    """The built-in corpus's sentences, from its plan (no audio is synthesized)."""

    speech_problem = "spoken_synth"


@registry.register_problem
class LanguagemodelMiniLibrispeechBooks(BookTextLanguageModelProblem):
    """Project Gutenberg books for `mini_librispeech`, its dev and test readers' books left out."""

    speech_problem = "mini_librispeech"
