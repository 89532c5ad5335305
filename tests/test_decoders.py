"""One decoder protocol: the problem's input kind picks the decoder class in
`decoders.decoder_for`, and the decoder command asks nothing else about it."""

import ast
import pathlib
import types

import pytest

import t2t_lite
from t2t_lite import registry
from t2t_lite.decoders import SpeechDecoder, TextDecoder, decoder_for
from t2t_lite.decoding.result import BLANK, Decoded
from t2t_lite.decoding.timing.subtitles import TimedWord

DECODER_CLI = pathlib.Path(t2t_lite.__file__).parent / "cli" / "decoder.py"


@pytest.mark.parametrize(
    "problem, kind",
    [
        ("librispeech", SpeechDecoder),
        ("speechocean762", SpeechDecoder),
        ("algorithmic_reverse_binary40", TextDecoder),
        ("translate_ende_wmt32k", TextDecoder),
    ],
)
def test_the_problem_picks_the_decoder(problem, kind):
    assert decoder_for(registry.problem(problem)) is kind


def test_a_problem_without_inputs_has_nothing_to_decode():
    language_model = types.SimpleNamespace(input_modality=None, name="lm")
    with pytest.raises(ValueError, match="problem lm has no inputs"):
        decoder_for(language_model)


def test_the_decoder_command_asks_nothing_about_the_input_kind():
    """No `input_modality` read and no decoder or transcriber class named:
    the protocol answers every difference."""
    tree = ast.parse(DECODER_CLI.read_text())
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "input_modality" not in attributes
    classes = {"SpeechDecoder", "TextDecoder", "StreamingTranscriber", "WaveformTranscriber"}
    assert not classes & names


def test_a_result_answers_for_its_best_beam():
    word = TimedWord("hi", 0.1, 0.3, 0.9)
    result = Decoded(("hi", "high"), (-1.0, -3.0), (word,)).with_context("hi", "a.wav")
    assert (result.text, result.score, result.reference, result.source) == (
        "hi",
        -1.0,
        "hi",
        "a.wav",
    )
    assert (BLANK.text, BLANK.score, BLANK.words) == ("", 0.0, ())
