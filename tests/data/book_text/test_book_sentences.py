"""Book prose normalized as LibriSpeech writes what its readers said."""

import re

from t2t_lite.data.book_text.book_sentences import book_sentences, normalize_sentence

LIBRISPEECH_ALPHABET = re.compile(r"^[A-Z']+( [A-Z']+)*$")


def test_abbreviations_numbers_and_numerals_are_spelled_out():
    assert normalize_sentence("Mrs. Jennings and Dr. Jones met at St. Paul's at 10.") == (
        "MISSUS JENNINGS AND DOCTOR JONES MET AT SAINT PAUL'S AT TEN"
    )
    assert normalize_sentence("It cost $1,250 in 1850, or 3.5 per cent.") == (
        "IT COST ONE THOUSAND TWO HUNDRED AND FIFTY DOLLARS IN EIGHTEEN FIFTY "
        "OR THREE POINT FIVE PER CENT"
    )
    assert normalize_sentence("Book IV. Louis XIV and the 22d of May") == (
        "BOOK FOUR LOUIS THE FOURTEENTH AND THE TWENTY SECOND OF MAY"
    )


def test_punctuation_goes_and_apostrophes_inside_words_stay():
    assert normalize_sentence(
        "\u201cO\u2019clock?\u201d\u2014she said, \u2018don\u2019t!\u2019 _Never_."
    ) == ("O'CLOCK SHE SAID DON'T NEVER")
    assert (
        normalize_sentence("Caf\u00e9 na\u00efve r\u00f4le; well-known")
        == "CAFE NAIVE ROLE WELL KNOWN"
    )
    assert normalize_sentence("* * * [23]") == ""


def test_sentences_split_at_ends_not_at_abbreviations_or_lowercase():
    body = 'Mr. Brown came in.  "Is it you?" she asked.\nHe nodded!\n\nCHAPTER II.\n\nIt rained.'
    assert list(book_sentences(body)) == [
        "MISTER BROWN CAME IN",
        "IS IT YOU SHE ASKED",
        "HE NODDED",
        "CHAPTER TWO",
        "IT RAINED",
    ]


def test_every_sentence_is_in_the_transcripts_alphabet():
    body = "Ærø, 1st & 2nd; 100% of £3 -- (see p. 12) ... O Lord! 'Tis\u2026 done."
    sentences = list(book_sentences(body))
    assert sentences and all(LIBRISPEECH_ALPHABET.match(s) for s in sentences), sentences
