"""The held-out readers' words: eight-word runs, and short transcripts whole."""

from t2t_lite.data.book_text.held_out_text import RUN_WORDS, HeldOutText


def test_a_shared_run_of_eight_words_is_found_anywhere_in_a_sentence():
    held = HeldOutText(["one two three four five six seven eight nine"])
    assert RUN_WORDS == 8
    assert held.shares_words("ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT TEN")
    assert held.shares_words("TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE")
    assert not held.shares_words("ONE TWO THREE FOUR FIVE SIX SEVEN TEN NINE")


def test_a_short_transcript_matches_only_a_sentence_that_is_it():
    held = HeldOutText(["yes my lord"])
    assert held.shares_words("YES MY LORD")
    assert not held.shares_words("YES MY LORD HE SAID")
    assert not HeldOutText([]).shares_words("YES MY LORD")
