"""transformer_algorithmic_tiny's learning rate: full after warmup until the
last 1,000 steps of the run, so that short runs learn too."""

import pytest

from t2t_lite import registry
from t2t_lite.training.learning_rate import T2TSchedule


@pytest.mark.parametrize("train_steps", [1500, 6000])
def test_the_rate_is_full_until_the_last_1000_steps(train_steps):
    hparams = registry.hparams("transformer_algorithmic_tiny")
    schedule = T2TSchedule.from_hparams(hparams, train_steps)
    full = hparams.learning_rate_constant
    assert float(schedule(hparams.learning_rate_warmup_steps)) == pytest.approx(full)
    assert float(schedule(train_steps - 1000)) == pytest.approx(full)
    assert float(schedule(train_steps - 500)) == pytest.approx(full / 2)
    assert float(schedule(train_steps)) == 0.0
