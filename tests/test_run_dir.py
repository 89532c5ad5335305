"""The resume check of `run_dir.save_or_check_hparams` on a speech run saved
before the problem had one of today's hparams."""

import json
import os

import pytest

from t2t_lite import registry, run_dir
from t2t_lite.hparam import create_hparams
from t2t_lite.training.build_trainer import ADDED_HPARAM_DEFAULTS

NEWER_HPARAM = "aug_envelope_db"  # added to the audio hparams after runs existed


def _run_saved_without(output_dir, name, problem):
    hparams = create_hparams("transformer_tiny", "", problem)
    values = json.loads(hparams.to_json())
    del values[name]
    with open(os.path.join(output_dir, run_dir.HPARAMS_FILE), "w") as handle:
        json.dump(values, handle)


def test_a_run_saved_before_an_audio_hparam_resumes_with_its_default(tmp_path):
    problem = registry.problem("librispeech")
    _run_saved_without(str(tmp_path), NEWER_HPARAM, problem)
    same = create_hparams("transformer_tiny", "", problem)
    run_dir.save_or_check_hparams(str(tmp_path), same, problem)  # passes
    with pytest.raises(run_dir.ResumeError, match="different hparams"):
        run_dir.save_or_check_hparams(str(tmp_path), same)  # without the problem: missing


def test_a_changed_value_of_that_hparam_is_still_refused(tmp_path):
    problem = registry.problem("librispeech")
    _run_saved_without(str(tmp_path), NEWER_HPARAM, problem)
    changed = create_hparams("transformer_tiny", f"{NEWER_HPARAM}=4.0", problem)
    with pytest.raises(run_dir.ResumeError, match=f"{NEWER_HPARAM} \\(saved 0.0, now 4.0\\)"):
        run_dir.save_or_check_hparams(str(tmp_path), changed, problem)


@pytest.mark.parametrize("name", sorted(ADDED_HPARAM_DEFAULTS))
def test_a_run_saved_before_a_model_or_step_hparam_resumes_with_its_default(tmp_path, name):
    problem = registry.problem("librispeech")
    _run_saved_without(str(tmp_path), name, problem)
    same = create_hparams("transformer_tiny", "", problem)
    run_dir.save_or_check_hparams(str(tmp_path), same, problem, defaults=ADDED_HPARAM_DEFAULTS)
    with pytest.raises(run_dir.ResumeError, match=f"{name} \\(saved None"):
        run_dir.save_or_check_hparams(str(tmp_path), same, problem)  # no defaults: missing
    # A value other than the default is still refused.
    other = {
        "conformer_conv_kernel": 3,
        "use_dynamic_left_chunk": "true",
        "intermediate_ctc_layer": 1,
        "intermediate_ctc_weight": 0.3,
        "phoneme_ctc_weight": 0.3,
        "phoneme_ctc_layer": 1,
    }[name]
    changed = create_hparams("transformer_tiny", f"{name}={other}", problem)
    with pytest.raises(run_dir.ResumeError, match=f"{name} \\(saved"):
        run_dir.save_or_check_hparams(
            str(tmp_path), changed, problem, defaults=ADDED_HPARAM_DEFAULTS
        )
