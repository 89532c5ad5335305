"""A pronunciation lexicon as a prefix tree of phonemes, for the lexicon search.

A hybrid recognizer decodes words, not letters: its search walks a tree
whose arcs are phonemes and whose nodes say which words end there, so every
hypothesis is a sequence of lexicon words. This is that tree over the phoneme
CTC head's ids (`phoneme_ctc_hparams.PHONEMES`), built from CMUdict
(`phoneme_targets.read_lexicon`), each word keyed for the word n-gram by the
hash the search gives its bytes (`TokenSpelling`), so the n-gram counted from
byte targets scores it.

Each node also carries the best unigram log probability of the words below
it (`smear`), the lookahead a lexicon search adds as it enters a node, so a
word's LM cost is paid as its sounds are heard, not all at its end.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.ngram.token_spelling import TokenSpelling

ROOT = 0


def word_keys(words: list[str]) -> np.ndarray:
    """int64 n-gram key (`word_hash`) of each word, spelled in bytes as the search spells it.

    Example:
    >>> bool(word_keys(["the"])[0] == word_keys(["the", "cat"])[0])
    True
    """
    if not words:
        return np.zeros(0, np.int64)
    return TokenSpelling.of([b" " + word.encode("utf-8") for word in words]).start_prefix


@dataclasses.dataclass
class PronunciationTrie:
    """Phoneme prefix tree of a lexicon's words.

    Attributes:
        children: per node, {phoneme id: child node}.
        words: per node, the indices (into `spellings`) of the words whose
            pronunciation ends there.
        spellings: each word's text.
        keys: int64 `[words]`, each word's n-gram key.
        smear: float `[nodes]`, the best unigram log probability of a word at
            or below each node (0 at the root).

    Example:
    ```python
    trie = PronunciationTrie.of({"cat": (K, AE, T), "cab": (K, AE, B)}, unigram)
    trie.children[ROOT][K]  # the node after "K"
    ```
    """

    children: list[dict[int, int]]
    words: list[list[int]]
    spellings: list[str]
    keys: np.ndarray
    smear: np.ndarray

    @classmethod
    def of(cls, lexicon: dict[str, tuple[int, ...]], unigram) -> PronunciationTrie:
        """The tree of `lexicon`'s words with a pronunciation.

        Args:
            lexicon: {word: phoneme ids}.
            unigram: a function from int64 word keys to their unigram log
                probabilities (the n-gram's), for `smear`.
        """
        spellings = [word for word, phonemes in lexicon.items() if phonemes]
        keys = word_keys(spellings)
        log_probs = np.asarray(unigram(keys), np.float64)
        children: list[dict[int, int]] = [{}]
        words: list[list[int]] = [[]]
        smear = [-np.inf]
        for index, spelling in enumerate(spellings):
            node = ROOT
            for phoneme in lexicon[spelling]:
                child = children[node].get(phoneme)
                if child is None:
                    child = len(children)
                    children[node][phoneme] = child
                    children.append({})
                    words.append([])
                    smear.append(-np.inf)
                node = child
                smear[node] = max(smear[node], log_probs[index])
            words[node].append(index)
        smear[ROOT] = 0.0
        return cls(children, words, spellings, keys, np.asarray(smear, np.float64))

    def __len__(self) -> int:
        return len(self.children)
