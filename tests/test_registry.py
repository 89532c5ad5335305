"""Tests for t2t_lite.registry: naming, duplicates, unknown names, lazy builtins."""

import subprocess
import sys

import pytest

from t2t_lite import registry
from t2t_lite.registry import Registry, RegistryError, default_name


@pytest.mark.parametrize(
    "name, expected",
    [
        ("LibrispeechCleanSmall", "librispeech_clean_small"),
        ("AlgorithmicReverseBinary40", "algorithmic_reverse_binary40"),
        ("TranslateEndeWmt32k", "translate_ende_wmt32k"),
        ("Librispeech", "librispeech"),
        ("transformer_base", "transformer_base"),
        ("transformer_librispeech_tpu_v2", "transformer_librispeech_tpu_v2"),
    ],
)
def test_default_name_is_t2t_snake_case(name, expected):
    obj = type(name, (), {})
    assert default_name(obj) == expected


def test_register_forms():
    reg = Registry("thing")

    @reg.register
    class FirstThing:
        pass

    @reg.register()
    def second_thing():
        pass

    @reg.register("custom_name")
    class Third:
        pass

    assert reg.names() == ["custom_name", "first_thing", "second_thing"]
    assert reg.get("first_thing") is FirstThing
    assert reg.get("custom_name") is Third
    assert "second_thing" in reg and "third" not in reg


def test_duplicate_name_is_an_error():
    reg = Registry("thing")

    @reg.register
    def my_thing():
        pass

    with pytest.raises(RegistryError, match="thing 'my_thing' is already registered"):

        @reg.register("my_thing")
        def other():
            pass

    assert reg.get("my_thing") is my_thing


def test_unknown_name_lists_up_to_three_closest():
    reg = Registry("problem")
    for name in ["librispeech", "librispeech_clean", "librispeech_noisy", "wmt", "mnist"]:
        reg.register(name)(type(name, (), {}))
    with pytest.raises(RegistryError) as info:
        reg.get("librispeach")
    message = str(info.value)
    assert message.startswith("unknown problem 'librispeach'; closest registered: librispeech,")
    assert message.count(",") == 2  # three suggestions
    with pytest.raises(RegistryError, match="no problem is registered"):
        Registry("problem").get("anything")


def test_builtin_hparams_sets_load_on_first_lookup():
    assert "transformer_base" in registry.list_hparams()
    assert registry.hparams("transformer_base").hidden_size == 512
    # Each lookup builds a fresh object: changing one does not leak.
    first = registry.hparams("transformer_base")
    first.hidden_size = 8
    assert registry.hparams("transformer_base").hidden_size == 512


def test_importing_t2t_lite_loads_nothing_heavy():
    code = (
        "import sys, t2t_lite, t2t_lite.registry;"
        "print('tensorflow' in sys.modules, 't2t_lite.hparams' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_help_string_has_every_kind():
    text = registry.help_string()
    assert "Problems:" in text and "Models:" in text and "HParams sets:" in text
    assert "  transformer_librispeech_v2" in text


def test_a_problem_registered_under_a_name_answers_to_it():
    from t2t_lite.data.problem import Problem

    reg = Registry("problem", on_set=registry._name_the_problem)

    @reg.register("custom_speech")
    class SomeSpeechTask(Problem):
        pass

    class Smaller(SomeSpeechTask):  # a test's smaller copy: the same data files
        pass

    class Unregistered(Problem):
        pass

    assert SomeSpeechTask().name == "custom_speech"
    assert Smaller().name == "custom_speech"
    assert Unregistered().name == "unregistered"
    assert registry.problem("spoken_synth").name == "spoken_synth"


def test_an_hparams_set_must_return_hparams(monkeypatch):
    def returns_a_dict():
        return {"hidden_size": 64}

    builtin = registry._HPARAMS.get
    monkeypatch.setattr(
        registry._HPARAMS,
        "get",
        lambda name: returns_a_dict if name == "dict_set" else builtin(name),
    )
    with pytest.raises(RegistryError) as info:
        registry.hparams("dict_set")
    message = str(info.value)
    assert message.startswith("hparams set 'dict_set' (")
    assert message.endswith(
        ".test_an_hparams_set_must_return_hparams.<locals>.returns_a_dict) returned dict, "
        "not HParams; make it return the HParams it builds."
    )
    assert registry.hparams("transformer_base").hidden_size == 512
