"""The pronunciation scorer: each finished word pays the phoneme CTC's price of its sounds."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.phoneme_ctc_hparams import PHONEME_VOCAB_SIZE, SPOKEN_NOISE, phoneme_id
from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search import model_search as model_search_module
from t2t_lite.decoding.search.beam_search import scored_beam_search
from t2t_lite.decoding.search.pronunciation_scorer import PronunciationScorer
from t2t_lite.decoding.search.pronunciation_table import PronunciationTable, load_pronunciations
from t2t_lite.decoding.search.scorer import Scorer, WeightedScorer
from t2t_lite.models.transformer import Transformer
from tests.helpers import spelled_score

ENCODER = ByteTextEncoder()
SURFACES = ENCODER.token_surfaces()
LEXICON = {
    word: tuple(phoneme_id(p) for p in sounds.split())
    for word, sounds in {"cat": "K AE T", "at": "AE T", "to": "T UW", "a": "AH"}.items()
}
FRAMES = 24


def phonemes(text: str) -> list[int]:
    """The phoneme ids the scorer should hear for `text`'s words (SPN when unknown)."""
    return [i for w in text.split() for i in LEXICON.get(w, (phoneme_id(SPOKEN_NOISE),))]


@pytest.fixture(scope="module")
def log_probs():
    """Random phoneme posteriors `[1, FRAMES + 4, vocab]`, the last 4 frames padding."""
    logits = np.random.default_rng(3).normal(scale=2.0, size=(1, FRAMES + 4, PHONEME_VOCAB_SIZE))
    return tf.nn.log_softmax(tf.constant(logits, tf.float32))


def ctc_log_prob(log_probs, labels: list[int]) -> float:
    """log p(labels | posteriors) by TF's CTC loss (blank 0), over the real frames."""
    if not labels:  # every frame blank (TF's loss wants a label)
        return float(tf.reduce_sum(log_probs[0, :FRAMES, 0]))
    loss = tf.nn.ctc_loss(
        tf.constant([labels], tf.int32),
        log_probs[:, :FRAMES],
        label_length=tf.constant([len(labels)]),
        logit_length=tf.constant([FRAMES]),
        logits_time_major=False,
        blank_index=0,
    )
    return -float(loss[0])


def scorer(log_probs, surfaces=SURFACES):
    return PronunciationScorer(log_probs, [FRAMES], PronunciationTable(LEXICON), 1, surfaces)


@pytest.mark.parametrize("text", ["cat at", "at to", "cat dog a", "a", "cat  at", " cat", ""])
def test_a_sentence_pays_the_phoneme_ctc_log_probability_of_its_words_sounds(log_probs, text):
    """Summed over a sentence's bytes and EOS: log p_ctc(its pronunciations),
    a word CMUdict lacks as one spoken noise, a repeated phoneme across a
    word boundary ("at to": T T) as CTC's repeat, empty words as nothing."""
    total, steps = spelled_score(scorer(log_probs), ENCODER.encode(text) + [EOS_ID])
    assert total == pytest.approx(ctc_log_prob(log_probs, phonemes(text)), abs=1e-3)
    finishing = [i for i, c in enumerate(text + "$") if c in " $" and text[:i].split()[-1:]]
    spoken_ends = {i for i in finishing if i == len(text) or text[i - 1] != " "}
    for i, step in enumerate(steps):
        if i not in spoken_ends and i != len(text):
            assert step == 0.0, f"byte {i} of {text!r} continues a word and scores 0"


def test_a_word_finishing_scores_the_prefix_probability_of_its_sounds(log_probs):
    """The space after "cat" scores log p_ctc(prefix K AE T): at least the
    whole-sequence probability, at most 0, and what remains is paid at EOS."""
    _, steps = spelled_score(scorer(log_probs), ENCODER.encode("cat at") + [EOS_ID])
    prefix = steps[3]
    assert ctc_log_prob(log_probs, phonemes("cat")) <= prefix <= 0.0
    assert prefix + steps[-1] == pytest.approx(
        ctc_log_prob(log_probs, phonemes("cat at")), abs=1e-3
    )


PIECES = [b"", b"", b"", b" cat", b" a", b"t", b" at", b"c", b" "]


@pytest.mark.parametrize("pieces", [[" cat", " a", "t"], [" ", "c", " at"], [" cat", " at"]])
def test_pieces_pay_what_the_bytes_of_their_text_pay(log_probs, pieces):
    ids = [PIECES.index(p.encode()) for p in pieces]
    text = "".join(pieces).strip()
    total, _ = spelled_score(scorer(log_probs, PIECES), ids + [EOS_ID])
    assert total == pytest.approx(ctc_log_prob(log_probs, phonemes(text)), abs=1e-3)


def test_the_lexicon_table_looks_words_up_by_hash_and_unknown_words_are_spoken_noise():
    table = load_pronunciations()  # the installed CMUdict
    scorer_words = PronunciationScorer(
        tf.zeros([1, 2, PHONEME_VOCAB_SIZE]), [2], table, 1, SURFACES
    )
    state = scorer_words.initial_state(1)
    for token in ENCODER.encode("cat"):
        chosen = tf.constant([[token]], tf.int32)
        state = scorer_words.select(state, state, tf.zeros([1, 1], tf.int32), chosen, chosen)
    ids, length = table.lookup(state["prefix"])
    assert ids[0, 0, : int(length[0, 0])].numpy().tolist() == list(
        map(phoneme_id, ["K", "AE", "T"])
    )
    ids, length = table.lookup(tf.constant([[12345]], tf.int64))
    assert int(length[0, 0]) == 1 and int(ids[0, 0, 0]) == phoneme_id(SPOKEN_NOISE)


def make_model(phoneme_layer: int = 0, phoneme_weight: float = 0.3):
    hparams = registry.hparams("transformer_tiny")
    hparams.parse(
        "hidden_size=32,filter_size=64,num_heads=4,num_hidden_layers=2,conv_first_kernel=3,"
        f"ctc_loss_weight=0.3,phoneme_ctc_weight={phoneme_weight},"
        f"phoneme_ctc_layer={phoneme_layer}"
    )
    return Transformer.from_hparams(
        hparams, input_modality="speech", target_vocab_size=ENCODER.vocab_size
    )


class Teacher(Scorer):
    """A full scorer that spells one sentence: 0 for its next token, -50 for any other."""

    def __init__(self, tokens: list[int]):
        self.tokens = tf.constant(tokens + [EOS_ID] * 8, tf.int32)

    def initial_state(self, beam_size):
        return {"unused": tf.zeros([1, beam_size])}

    def score(self, state, alive_seq, step, candidates=None):
        wanted = tf.one_hot(self.tokens[step], ENCODER.vocab_size, 0.0, -50.0)
        return tf.broadcast_to(wanted, [1, tf.shape(alive_seq)[1], ENCODER.vocab_size]), state

    def select(self, state, new_state, parents, columns, tokens):
        return state


@pytest.mark.parametrize("text", ["cat at", "cat dog a"])
def test_the_beam_search_adds_the_weighted_pronunciation_log_probability(log_probs, text):
    """Through the search's beams: the best hypothesis's score grows by
    `weight * log p_ctc(its words' sounds)` (no length penalty)."""
    tokens = ENCODER.encode(text)

    def search(weight):
        scorers = [WeightedScorer(Teacher(tokens), 1.0)]
        scorers.append(WeightedScorer(scorer(log_probs), weight))
        ids, scores = scored_beam_search(
            scorers, tf.zeros([1], tf.int32), 3, len(tokens) + 4, ENCODER.vocab_size, 0.0
        )
        assert ENCODER.decode(ids[0, 0].numpy()) == text
        return float(scores[0, 0])

    expected = 0.4 * ctc_log_prob(log_probs, phonemes(text))
    assert search(0.4) - search(0.0) == pytest.approx(expected, abs=1e-3)


def test_model_search_scores_pronunciations_with_the_models_phoneme_head(monkeypatch):
    """The decoder's search builds the scorer from the model's phoneme
    posteriors and calls it at each step (and not at phoneme_weight=0)."""
    seen = []

    class Recording(PronunciationScorer):
        def __init__(self, phoneme_log_probs, *args):
            seen.append(phoneme_log_probs)
            super().__init__(phoneme_log_probs, *args)

        def score(self, *args, **kwargs):
            seen.append("score")
            return super().score(*args, **kwargs)

    monkeypatch.setattr(model_search_module, "PronunciationScorer", Recording)
    rng = np.random.default_rng(0)
    model = make_model()
    features = {
        "inputs": tf.constant(rng.normal(size=(2, 32, 80, 3)), tf.float32),
        "inputs_length": tf.constant([32, 20], tf.int32),
    }
    model(dict(features, targets=tf.ones([2, 3], tf.int32)))  # built
    memory, _ = model.encode(features)
    for weight in (0.0, 0.5):
        config = DecodeConfig.parse(f"beam_size=2,phoneme_weight={weight}").for_model(model)
        model_search_module.model_search(model, features, config, 6, target_surfaces=SURFACES)
    assert len(seen) > 2 and all(item == "score" for item in seen[1:])
    np.testing.assert_allclose(seen[0], model.phoneme_log_probs(memory), atol=1e-5)


@pytest.mark.parametrize(
    "model_args, overrides, message",
    [
        ({}, "phoneme_weight=-1", "phoneme_weight must be >= 0"),
        ({"phoneme_weight": 0.0}, "phoneme_weight=0.5", "phoneme CTC head on its last encoder"),
        ({"phoneme_layer": 1}, "phoneme_weight=0.5", "phoneme CTC head on its last encoder"),
        ({}, "phoneme_weight=0.5,ctc_weight=1", "phoneme_weight needs a beam search"),
    ],
)
def test_phoneme_weight_the_model_cannot_honour_is_refused_in_one_sentence(
    model_args, overrides, message
):
    with pytest.raises(ValueError, match=message):
        DecodeConfig.parse(overrides).for_model(make_model(**model_args))
