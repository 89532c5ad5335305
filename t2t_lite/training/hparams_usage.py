"""Which hparams a run reads, so that one nothing reads is reported, not ignored.

T2T silently ignored hparams its code never read (its transformer_librispeech
sets `learning_rate=0.15`, which the schedule string never uses). Here every
reader declares what it reads (a registered model in its class attribute
`HPARAMS`; a model that declares nothing is taken to read every hparam); an
hparam that is set (by --hparams or by an hparams set, differing from
transformer_base) but read by nothing in this run gets a warning naming it.
"""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.data.pipeline import PIPELINE_HPARAMS
from t2t_lite.data.problem import Problem
from t2t_lite.hparam import HParams
from t2t_lite.models.transformer_config import MODEL_HPARAMS
from t2t_lite.training.learning_rate import (
    ACCUMULATE,
    FACTOR_HPARAMS,
    SCHEDULE_HPARAMS,
    parse_schedule,
)
from t2t_lite.training.optimizers import OPTIMIZER_HPARAMS, optimizer_name
from t2t_lite.training.train_step import STEP_HPARAMS

# Kept for T2T compatibility but read by nothing, with the reason.
DELIBERATELY_UNUSED = {
    "learning_rate": "read only by T2T's legacy schedule, which t2t-lite does not have",
}

# What some run of the built-in `transformer` reads.
ANY_RUN_READS = frozenset(
    set(MODEL_HPARAMS)
    | set(PIPELINE_HPARAMS)
    | set(SCHEDULE_HPARAMS)
    | {"optimizer", *(name for names in OPTIMIZER_HPARAMS.values() for name in names)}
    | set(STEP_HPARAMS)
)


def model_hparams_read(hparams: HParams, model_name: str) -> set[str]:
    """What the registered model `model_name` reads: its `HPARAMS`, else every hparam.

    A model that declares nothing counts as reading every hparam, so that none
    is wrongly reported.
    """
    declared = getattr(registry.model(model_name), "HPARAMS", None)
    return set(hparams.keys()) if declared is None else set(declared)


def hparams_read(
    hparams: HParams, problem: Problem | None = None, model_name: str = "transformer"
) -> set[str]:
    """The hparams this configuration (model `model_name`) actually reads."""
    read = model_hparams_read(hparams, model_name) | set(PIPELINE_HPARAMS) | set(STEP_HPARAMS)
    read |= {"learning_rate_schedule", ACCUMULATE, "optimizer"}
    for factor in parse_schedule(hparams.learning_rate_schedule):
        read |= set(FACTOR_HPARAMS[factor])
    read |= set(OPTIMIZER_HPARAMS[optimizer_name(hparams)])
    if problem is not None:
        read |= set(problem.hparams_read())
    return read


def unread_settings(
    hparams: HParams,
    problem: Problem | None = None,
    overridden: set[str] = frozenset(),
    model_name: str = "transformer",
) -> dict[str, str]:
    """`{name: why}` for hparams set on purpose that this run never reads."""
    base = registry.hparams("transformer_base")
    read = hparams_read(hparams, problem, model_name)
    unread = {}
    for name in hparams.keys():
        if name in read:
            continue
        changed = name in overridden or (name in base and base.get(name) != hparams.get(name))
        if changed:
            unread[name] = DELIBERATELY_UNUSED.get(name, "nothing in this run reads it")
    return unread
