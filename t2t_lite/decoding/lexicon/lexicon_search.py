"""Words from the phoneme CTC head: a lexicon search with the word n-gram.

The byte decoder spells what it hears by ear ("they and tide and medered
away" for "they untied it and led it away") while the phoneme head on the
same encoder hears the sounds nearly right (`docs/benchmarks.md`, "What the
phoneme head hears"). A hybrid recognizer turns such sounds into words
through a lexicon; this is that search (as flashlight's lexicon decoder and
Kaldi's token passing do it): frame-synchronous Viterbi over CTC paths
constrained to the pronunciation tree (`PronunciationTrie`), each
hypothesis a sequence of lexicon words and a position in the tree.

A hypothesis's score is

    sum over frames of ln p(label | frame)                (the CTC path)
    + lm_weight * (ln P_ngram(its words, then EOS))       (the word n-gram)
    + word_bonus * (its number of words)

with each word's n-gram cost paid ahead as its unigram lookahead (the
tree's `smear`) while its sounds are walked, and settled to its n-gram
probability where it ends. Hypotheses in the same state (n-gram history,
tree node, last label) are merged keeping the best; each frame keeps those
within `beam_threshold` of the best, at most `beam_size`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.data.reserved_ids import PAD_ID
from t2t_lite.decoding.lexicon.pronunciation_trie import ROOT, PronunciationTrie
from t2t_lite.decoding.lexicon.word_lm import WordLm
from t2t_lite.ngram import word_hash

BLANK = PAD_ID  # the phoneme head's blank, as the byte CTC head's


@dataclasses.dataclass(frozen=True)
class LexiconSearchConfig:
    """How wide the lexicon search looks and how it weighs the n-gram.

    Attributes:
        beam_size: hypotheses kept after each frame.
        beam_threshold: hypotheses more than this below the best are dropped.
        token_threshold: a phoneme more than this below the frame's best
            label is not entered (the head's posteriors are peaky).
        lm_weight: the n-gram's weight.
        word_bonus: added per word (against the n-gram's pull to fewer words).
    """

    beam_size: int = 64
    beam_threshold: float = 25.0
    token_threshold: float = 10.0
    lm_weight: float = 1.0
    word_bonus: float = 0.0


@dataclasses.dataclass(frozen=True)
class LexiconHypothesis:
    """One transcript of the lexicon search: its words and its score."""

    words: tuple[str, ...]
    score: float

    @property
    def text(self) -> str:
        return " ".join(self.words)


def _keep(hyps: dict, state: tuple, score: float, words) -> None:
    """Viterbi recombination: a state keeps its best-scoring way in."""
    old = hyps.get(state)
    if old is None or score > old[0]:
        hyps[state] = (score, words)


def _spelled(trie: PronunciationTrie, chain) -> tuple[str, ...]:
    words = []
    while chain is not None:
        index, chain = chain
        words.append(trie.spellings[index])
    return tuple(reversed(words))


def lexicon_search(
    log_probs: np.ndarray,
    trie: PronunciationTrie,
    lm: WordLm,
    config: LexiconSearchConfig,
    num_best: int = 1,
) -> list[LexiconHypothesis]:
    """The best word sequences of one utterance's phoneme posteriors, best first.

    Args:
        log_probs: float `[frames, phonemes]`, the phoneme head's per-frame
            log posteriors (blank at `PAD_ID`), the utterance's real frames only.
        trie: the lexicon (`PronunciationTrie.of`).
        lm: the word n-gram.
        config: beams and weights.
        num_best: how many hypotheses to return (fewer when fewer survive).

    Returns:
        `LexiconHypothesis` list; an utterance without frames is one empty one.
    """
    log_probs = np.asarray(log_probs, np.float64)
    weight, bonus = config.lm_weight, config.word_bonus
    children, smear, word_ends = trie.children, trie.smear, trie.words
    # state (history, node, last label) -> (score, words as a chain (index, rest))
    hyps: dict[tuple, tuple[float, tuple | None]] = {(lm.start, ROOT, BLANK): (0.0, None)}
    for frame in log_probs:
        best_label = frame.max()
        entered = [
            label
            for label in np.flatnonzero(frame >= best_label - config.token_threshold).tolist()
            if label != BLANK
        ]
        new: dict[tuple, tuple[float, tuple | None]] = {}
        ending = []
        blank = frame[BLANK]
        for (history, node, last), (score, words) in hyps.items():
            _keep(new, (history, node, BLANK), score + blank, words)
            if last != BLANK:
                _keep(new, (history, node, last), score + frame[last], words)
            below = children[node]
            for label in entered:
                child = below.get(label)
                if child is None or label == last:
                    continue
                entered_score = score + frame[label] + weight * (smear[child] - smear[node])
                if children[child]:
                    _keep(new, (history, child, label), entered_score, words)
                for index in word_ends[child]:
                    ending.append((history, child, label, entered_score, words, index))
        if ending:
            questions = [(e[0], int(trie.keys[e[5]])) for e in ending]
            for (history, child, label, score, words, index), (question, lm_score) in zip(
                ending, zip(questions, lm.log_probs(questions), strict=True), strict=True
            ):
                state = (lm.after(history, question[1]), ROOT, label)
                _keep(
                    new, state, score + weight * (lm_score - smear[child]) + bonus, (index, words)
                )
        best = max(score for score, _ in new.values())
        kept = [item for item in new.items() if item[1][0] >= best - config.beam_threshold]
        if len(kept) > config.beam_size:
            kept.sort(key=lambda item: item[1][0], reverse=True)
            kept = kept[: config.beam_size]
        hyps = dict(kept)
    return _finished(hyps, trie, lm, weight, num_best)


def _finished(hyps, trie, lm, weight, num_best) -> list[LexiconHypothesis]:
    """Hypotheses between words, each with the n-gram's end of sentence; best first.

    When every hypothesis is inside a word (the audio stops mid-word) the
    words finished so far are the transcript.
    """
    between = [(state, value) for state, value in hyps.items() if state[1] == ROOT]
    candidates = between or list(hyps.items())
    ends = lm.log_probs([(state[0], int(word_hash.EOS_WORD)) for state, _ in candidates])
    finished = sorted(
        (
            (score + weight * end, words)
            for (_, (score, words)), end in zip(candidates, ends, strict=True)
        ),
        key=lambda item: item[0],
        reverse=True,
    )
    seen, results = set(), []
    for score, words in finished:
        spelled = _spelled(trie, words)
        if spelled not in seen:
            seen.add(spelled)
            results.append(LexiconHypothesis(spelled, float(score)))
        if len(results) == num_best:
            break
    return results
