"""A word n-gram as the search's LM: paid letter by letter, fused as a trained LM is."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation.evaluator import DecodeEvaluator
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.decoding.search.word_ngram_scorer import NgramTensors, WordNgramScorer
from t2t_lite.ngram import word_hash
from t2t_lite.ngram.kneser_ney import build_kneser_ney
from t2t_lite.ngram.sentence_words import word_stream
from tests.helpers import CTC_BEAM_DECODE, run_command, spelled_score
from tests.serving.runs import pad_rows, speech_features, tone_and_noise

ENCODER = ByteTextEncoder()
SPACE_ID = ENCODER.encode(" ")[0]
SURFACES = ENCODER.token_surfaces()
TEXT = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "the cat ran"]


@pytest.fixture(scope="module")
def tables():
    ids = [ENCODER.encode(s) for s in TEXT]
    stream, vocabulary = word_stream(
        np.concatenate(ids), np.array([len(i) for i in ids]), SPACE_ID, 3
    )
    counted = build_kneser_ney(stream, 3, vocabulary)
    counted.info.update(space_id=SPACE_ID, target_vocab_size=ENCODER.vocab_size)
    return counted


def word(text: str) -> int:
    ids = [np.array([i]) for i in ENCODER.encode(text)]
    return int(word_hash.chain_np(word_hash.WORD_SEED, ids)[0])


def sentence_log_prob(tables, text: str) -> float:
    hashes = [int(word_hash.BOS_WORD)] * 2 + [word(w) for w in text.split()]
    hashes.append(int(word_hash.EOS_WORD))
    return float(
        sum(
            tables.log_prob(np.array([hashes[i - 2 : i]]), np.array([hashes[i]]))[0]
            for i in range(2, len(hashes))
        )
    )


@pytest.mark.parametrize("text", ["the cat sat", "a dog ran on the mat", "the qzx sat", "zzz"])
def test_a_spelled_sentence_pays_exactly_its_ngram_log_probability(tables, text):
    """Letters pay lookahead, the space or EOS the rest: the sum over the
    bytes is the n-gram's log probability of the words and the end, an
    out-of-vocabulary word included."""
    scorer = WordNgramScorer(NgramTensors(tables), 1, SURFACES)
    total, steps = spelled_score(scorer, ENCODER.encode(text) + [EOS_ID])
    assert total == pytest.approx(sentence_log_prob(tables, text), abs=1e-3)
    assert all(s <= 1e-6 for s in steps[:1])  # a first letter costs its words' mass


# A piece vocabulary (SentencePiece's surfaces: a word's space leads its
# first piece); id 2 is unknown (no text), as SentencePiece's unk.
PIECES = [b"", b"", b"", b" the", b" c", b"at", b" ", b"s", b"a", b"t", b"h", b"e"]
PIECES += [b" sat", b"q", b"z", b"x", b" on", b" m", b" d", b"og"]


@pytest.mark.parametrize(
    "pieces, text",
    [
        ([" the", " c", "at", " sat"], "the cat sat"),
        ([" ", "t", "h", "e", " c", "a", "t", " ", "s", "at"], "the cat sat"),
        ([" the", " ", "q", "z", "x", " sat"], "the qzx sat"),
        ([" on", " the", " m", "at"], "on the mat"),
        ([" the", " ", " d", "og"], "the  dog"),  # an empty word between two spaces
        ([" the", " c", "<unk>", " sat"], None),  # a word with an unknown piece: OOV
    ],
)
def test_pieces_pay_what_the_bytes_of_their_text_pay(tables, pieces, text):
    """However pieces split a sentence, they pay what its bytes pay: the
    n-gram's log probability of its words (a word's space in its first
    piece; a sentence's first space is not an empty word)."""
    ids = [PIECES.index(p.encode()) if p != "<unk>" else 2 for p in pieces]
    total, _ = spelled_score(WordNgramScorer(NgramTensors(tables), 1, PIECES), ids + [EOS_ID])
    bytes_total, _ = spelled_score(
        WordNgramScorer(NgramTensors(tables), 1, SURFACES),
        ENCODER.encode(text or "the qzx sat") + [EOS_ID],
    )
    assert total == pytest.approx(bytes_total, abs=1e-4)
    if text and "  " not in text:
        assert total == pytest.approx(sentence_log_prob(tables, text), abs=1e-3)


def test_known_words_are_cheaper_to_spell_than_unknown_ones(tables):
    scorer = WordNgramScorer(NgramTensors(tables), 1, SURFACES)
    known, _ = spelled_score(scorer, ENCODER.encode("the cat") + [EOS_ID])
    misspelled, steps = spelled_score(scorer, ENCODER.encode("the cqt") + [EOS_ID])
    assert known > misspelled
    # The misspelling pays when it leaves the vocabulary ("cq": the OOV cost
    # after "the" less what "c" paid), and nothing for its later letters.
    the = np.array([word("the")])
    backoff = tables.histories[1].get(word_hash.chain_np(word_hash.history_seed(1), [the]), 0)[1]
    paid_for_c = np.log(bigram_mass(tables, "the", ["cat"]))
    assert steps[5] == pytest.approx(tables.oov_log_prob + backoff[0] - paid_for_c, abs=1e-5)
    assert steps[6] == pytest.approx(0.0, abs=1e-5)


def bigram_mass(tables, previous: str, words: list[str]) -> float:
    """Sum of P_2(w | previous) over `words`, by ARPA's backoff from the tables."""
    v = np.array([word(previous)])
    history = word_hash.chain_np(word_hash.history_seed(1), [v])
    backoff = tables.histories[1].get(history, 0.0)[1][0]
    total = 0.0
    for w in words:
        w = np.array([word(w)])
        found, value = tables.grams[1].get(word_hash.chain_np(word_hash.ngram_seed(2), [v, w]), 0)
        unigram = tables.grams[0].get(word_hash.chain_np(word_hash.ngram_seed(1), [w]), 0)[1]
        total += np.exp(value[0] if found[0] else backoff + unigram[0])
    return float(total)


@pytest.mark.parametrize(
    "previous, prefix, words",
    [
        ("the", "ca", ["cat"]),
        ("the", "d", ["dog"]),
        ("the", "a", ["a", "and"]),
        ("cat", "s", ["sat"]),
        ("zebra", "s", ["sat"]),
    ],
)
def test_a_prefix_costs_the_bigram_mass_of_the_words_it_begins(tables, previous, prefix, words):
    """Seen bigrams ("the cat"), unseen ones ("the and": backed off to the
    unigram) and an unknown word before ("zebra") alike."""
    lm = NgramTensors(tables)
    spelled = word_hash.chain_np(
        word_hash.WORD_SEED, [np.array([i]) for i in ENCODER.encode(prefix)]
    )
    mass = lm.prefix_mass(tf.constant([word(previous)]), tf.constant(spelled))
    assert float(tf.exp(mass)[0]) == pytest.approx(bigram_mass(tables, previous, words), rel=1e-5)


def test_a_search_step_reads_the_tables_densely(tables):
    """No sparse read of a table variable (`ResourceGather`): one puts the
    variable in copy-on-read mode, after which every step copies the table."""
    scorer = WordNgramScorer(NgramTensors(tables), 2, SURFACES)
    state = scorer.initial_state(3)
    step = tf.function(lambda s: scorer.score(s, None, 0)).get_concrete_function(state)
    ops = {op.type for op in step.graph.get_operations()}
    assert "ReadVariableOp" in ops and "GatherV2" in ops
    assert "ResourceGather" not in ops


@pytest.fixture(scope="module")
def clips(speech_run) -> dict:
    return speech_features(list(tone_and_noise().values()), speech_run.hparams)


def decode(run, clips, overrides: str) -> list[str]:
    surfaces = run.encoders["targets"].token_surfaces()
    decoder = BatchDecoder(run.model, run.run_config, DecodeConfig.parse(overrides), None, surfaces)
    ids, _ = decoder({k: tf.constant(v) for k, v in clips.items()})
    return [run.encoders["targets"].decode(row[0]) for row in ids]


def test_an_ngram_lm_dir_fuses_as_a_trained_lm_does(speech_run, no_ngram_dir, clips):
    """The n-gram t2t-lite-ngram counted from "no" three times and "hi" once
    turns the tone's "hi" into "no" at weight 1, not at 0.02 (the trained
    LM's test above, with the n-gram in `lm_dir`)."""
    assert decode(speech_run, clips, CTC_BEAM_DECODE) == ["hi", "no"]
    fused = f"{CTC_BEAM_DECODE},lm_dir={no_ngram_dir},lm_weight=1.0"
    assert decode(speech_run, clips, fused) == ["no", "no"]
    weak = f"{CTC_BEAM_DECODE},lm_dir={no_ngram_dir},lm_weight=0.02"
    assert decode(speech_run, clips, weak) == ["hi", "no"]


def test_the_trainer_evaluation_fuses_an_ngram_as_the_decoder_does(
    speech_run, no_ngram_dir, clips, tmp_path
):
    """The trainer's dev decode takes the n-gram's `lm_dir` too: with "no"
    the reference of both clips, the tone's "hi" is half the WER without
    the n-gram and none with it."""
    reference = speech_run.encoders["targets"].encode("no") + [EOS_ID]
    dataset = tf.data.Dataset.from_tensors(
        {**clips, "targets": pad_rows([np.array(reference)] * 2, np.int32)}
    )

    def evaluate(overrides: str) -> float:
        evaluator = DecodeEvaluator(
            speech_run.model, speech_run.run_config, speech_run.problem, str(tmp_path), overrides
        )
        return evaluator(dataset)["decode_wer"]

    assert evaluate(CTC_BEAM_DECODE) == pytest.approx(0.5)
    assert evaluate(f"{CTC_BEAM_DECODE},lm_dir={no_ngram_dir},lm_weight=1.0") == 0.0


def test_t2t_lite_ngram_refuses_bad_input_in_one_line(tmp_path):
    for args, expected in [
        (["--problem=spoken_synth"], "has inputs"),
        (["--problem=languagemodel_spoken_synth"], "no train data"),
        (["--problem=languagemodel_spoken_synth", "--ngram_order=1"], "--ngram_order"),
    ]:
        result = run_command(
            "t2t-lite-ngram", f"--data_dir={tmp_path}", f"--output_dir={tmp_path}/lm", *args
        )
        assert result.returncode == 1, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("t2t-lite-ngram: error:") and expected in last, last
        assert "Traceback" not in result.stderr
        assert not (tmp_path / "lm").exists()
