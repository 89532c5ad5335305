"""Every transformer_base hparam is read by someone or listed as unused."""

from t2t_lite import registry
from t2t_lite.data.speech_problem import SpeechRecognitionProblem
from t2t_lite.training.hparams_usage import (
    ANY_RUN_READS,
    DELIBERATELY_UNUSED,
    hparams_read,
    unread_settings,
)


def test_every_base_hparam_is_read_or_listed():
    base = registry.hparams("transformer_base")
    unaccounted = set(base.keys()) - ANY_RUN_READS - set(DELIBERATELY_UNUSED)
    assert not unaccounted


def test_t2t_librispeech_learning_rate_is_reported():
    hparams = registry.hparams("transformer_librispeech_v2")
    unread = unread_settings(hparams, SpeechRecognitionProblem())
    assert list(unread) == ["learning_rate"]
    assert "legacy schedule" in unread["learning_rate"]


def test_overrides_nothing_reads_are_reported():
    hparams = registry.hparams("transformer_base").parse("conv_first_kernel=5,hidden_size=64")
    # conv_first_kernel is read by the model (declared); adafactor settings are not, with adam.
    hparams.parse("optimizer_adafactor_clipping_threshold=2.0")
    unread = unread_settings(hparams, None, {"optimizer_adafactor_clipping_threshold"})
    assert list(unread) == ["optimizer_adafactor_clipping_threshold"]
    assert "optimizer_adafactor_clipping_threshold" in hparams_read(
        hparams.parse("optimizer=adafactor")
    )


def test_speech_problem_hparams_are_read():
    problem = SpeechRecognitionProblem()
    hparams = problem.add_hparams(registry.hparams("transformer_speech_small"))
    assert hparams.audio_num_mel_bins == 80
    assert unread_settings(hparams, problem, {"audio_dither", "specaugment_freq_masks"}) == {}


def test_the_model_named_by_the_run_declares_what_it_reads(monkeypatch):
    class DeclaresWidth:
        HPARAMS = ("hidden_size",)

    class DeclaresNothing:
        pass

    models = {"declares_width": DeclaresWidth, "declares_nothing": DeclaresNothing}
    builtin = registry.model
    monkeypatch.setattr(registry, "model", lambda name: models.get(name) or builtin(name))
    hparams = registry.hparams("transformer_base").parse("hidden_size=64,filter_size=128")
    overridden = {"hidden_size", "filter_size"}
    assert list(unread_settings(hparams, None, overridden, "declares_width")) == ["filter_size"]
    assert unread_settings(hparams, None, overridden, "declares_nothing") == {}
    assert unread_settings(hparams, None, overridden, "transformer") == {}
