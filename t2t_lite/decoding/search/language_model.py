"""A trained language model as a scorer of the search (shallow fusion).

Shallow fusion (Gulcehre et al. 2015; ESPnet's `lm_weight`) adds
`lm_weight * log P_LM(token | prefix)` to each extension's score, EOS
included, so the search prefers hypotheses that read as the LM's text. The
LM is a decoder-only `Transformer` trained by `t2t-lite-trainer` on a
`languagemodel_*` problem that shares the recognizer's target vocabulary,
or a word n-gram that `t2t-lite-ngram` counted from a byte problem's text
(`word_ngram_scorer.py`), which spells any recognizer's tokens (bytes,
SentencePiece) from their text; decode hparams `lm_dir` (the trainer's
output_dir or the n-gram's directory) and `lm_weight` turn it on.
"""

from __future__ import annotations

import functools
import os

import tensorflow as tf

from t2t_lite import registry, run_dir
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer
from t2t_lite.decoding.search.scorer import Scorer
from t2t_lite.decoding.search.word_ngram_scorer import NgramTensors, WordNgramScorer, load_ngram
from t2t_lite.ngram.ngram_tables import has_ngram


@functools.lru_cache(maxsize=4)
def _load(lm_dir: str):
    flags = run_dir.load_flags(lm_dir)
    if not flags.get("problem"):
        raise ValueError(
            f"decode hparam lm_dir={lm_dir} holds no t2t-lite-trainer run (no flags.json "
            "naming its problem); train an LM there first, e.g. --problem=languagemodel_<corpus>."
        )
    problem = registry.problem(flags["problem"])
    if problem.has_inputs:
        raise ValueError(
            f"decode hparam lm_dir={lm_dir} was trained on {flags['problem']}, which has inputs; "
            "shallow fusion needs a language model (a languagemodel_* problem)."
        )
    try:
        run = TrainedRun.of(
            lm_dir,
            problem,
            model_name=flags.get("model") or "transformer",
            data_dir=flags.get("data_dir"),
        )
        model, _ = run.restored_model()
    except FileNotFoundError as error:  # no hparams.json or no checkpoint
        raise ValueError(f"decode hparam lm_dir={lm_dir}: {error}") from error
    return model


def load_language_model(lm_dir: str, recognizer=None):
    """The LM in `lm_dir`, loaded once per path: a Keras model, or `NgramTensors`.

    Either has `variables`, what a SavedModel of the fused search must hold.

    Args:
        lm_dir: a `t2t-lite-trainer` output_dir of a `languagemodel_*` problem
            (its latest checkpoint), or a `t2t-lite-ngram` output.
        recognizer: when given, the model the LM is fused with: a trained LM's
            target vocabulary must be the same size (an n-gram spells any).

    Raises:
        ValueError: no LM run there (or no checkpoint), a model with
            inputs, or another vocabulary (one sentence naming `lm_dir`).
    """
    if has_ngram(lm_dir):
        lm = load_ngram(lm_dir)
    else:
        # Eagerly, even when a traced search asks first: a checkpoint restores
        # outside a graph, and the loaded model is shared by every trace.
        with tf.init_scope():
            lm = _load(os.path.abspath(lm_dir))
    spells_any = isinstance(lm, NgramTensors)
    if (
        recognizer is not None
        and not spells_any
        and lm.target_vocab_size != recognizer.target_vocab_size
    ):
        raise ValueError(
            f"decode hparam lm_dir={lm_dir} holds an LM over {lm.target_vocab_size} target ids, "
            f"the recognizer has {recognizer.target_vocab_size}: make the LM from the "
            "recognizer's vocabulary (its languagemodel_* problem)."
        )
    return lm


def language_model_scorer(
    lm_dir: str, recognizer, batch_size, max_length=None, target_surfaces=None
) -> Scorer:
    """A full scorer of `log P_LM(token | prefix)` for a batch.

    Args:
        lm_dir: the LM's run (`load_language_model`).
        recognizer: the model it is fused with (the vocabularies must match).
        batch_size: the search's batch (an int or a scalar tensor).
        max_length: None (a growing cache, the dynamic search) or the static
            cap of a fixed-shape search.
        target_surfaces: the recognizer's `token_surfaces()`, which an
            n-gram needs to spell its tokens.

    Raises:
        ValueError: an n-gram without `target_surfaces` (a caller's bug).
    """
    lm = load_language_model(lm_dir, recognizer)
    if has_ngram(lm_dir):
        if target_surfaces is None:
            raise ValueError(
                f"decode hparam lm_dir={lm_dir} is a word n-gram; the search needs the "
                "recognizer's token surfaces to spell words with it."
            )
        return WordNgramScorer(lm, batch_size, target_surfaces)
    cache = lm.initial_decode_cache({}, max_length, batch_size=batch_size)
    return DecoderScorer(
        lambda ids, step, states: lm.decode_step(ids[:, -1], step, states),
        cache,
        use_fixed_shapes=max_length is not None,
    )
