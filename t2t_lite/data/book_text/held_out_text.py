"""What a language model's text must not hold: the held-out readers' words.

A book the test readers read is removed by its Project Gutenberg number,
but the same book comes in other editions under other numbers (Les
Miserables has a number for the whole and one per volume), and a passage
can be quoted in another book. So every sentence is also checked against
the held-out transcripts: one that shares a run of `RUN_WORDS` words with
any of them is dropped, and a book with `SAME_BOOK_SENTENCES` such
sentences is taken for another edition of a held-out book and dropped
whole.
"""

from __future__ import annotations

from collections.abc import Iterable

# Eight words in a row are rarely shared by chance in prose ("AT THE SAME TIME
# THAT HE WAS" is seven), and a transcript shorter than that must match whole.
RUN_WORDS = 8
SAME_BOOK_SENTENCES = 3


def _runs(words: list[str]) -> Iterable[tuple[str, ...]]:
    if len(words) < RUN_WORDS:
        return [tuple(words)] if words else []
    return (tuple(words[i : i + RUN_WORDS]) for i in range(len(words) - RUN_WORDS + 1))


class HeldOutText:
    """The word runs of held-out transcripts, to test sentences against.

    Args:
      transcripts: the held-out (dev and test) transcripts, any case.

    Example:
      >>> held = HeldOutText(["he untied it and led it away from the fire"])
      >>> held.shares_words("AND THEN HE UNTIED IT AND LED IT AWAY FROM HIM")
      True
      >>> held.shares_words("HE UNTIED THE ROPE")
      False
    """

    def __init__(self, transcripts: Iterable[str]):
        self.runs: set[tuple[str, ...]] = set()
        self.short: set[tuple[str, ...]] = set()
        for transcript in transcripts:
            words = transcript.upper().split()
            (self.short if len(words) < RUN_WORDS else self.runs).update(_runs(words))

    def shares_words(self, sentence: str) -> bool:
        """Whether `sentence` (upper case) holds a held-out run, or is a short transcript."""
        words = sentence.split()
        if tuple(words) in self.short:
            return True
        return any(run in self.runs for run in _runs(words)) if len(words) >= RUN_WORDS else False
