"""Numbers as readers say them (the rules LibriSpeech's transcripts follow)."""

import pytest

from t2t_lite.data.book_text.spoken_numbers import cardinal, ordinal, roman, year


@pytest.mark.parametrize(
    "n, words",
    [
        (0, "zero"),
        (13, "thirteen"),
        (40, "forty"),
        (99, "ninety nine"),
        (100, "one hundred"),
        (101, "one hundred and one"),
        (1000, "one thousand"),
        (1005, "one thousand and five"),
        (21_000_300, "twenty one million three hundred"),
        (2_000_000_000, "two billion"),
    ],
)
def test_cardinals(n, words):
    assert cardinal(n) == words


def test_ordinals_change_only_the_last_word():
    assert [ordinal(n) for n in (1, 2, 3, 5, 8, 9, 12, 20, 44, 101)] == [
        "first", "second", "third", "fifth", "eighth", "ninth", "twelfth",
        "twentieth", "forty fourth", "one hundred and first",
    ]  # fmt: skip


def test_years_are_read_in_pairs_between_1100_and_1999():
    assert year(1066) == "one thousand and sixty six"
    assert year(1492) == "fourteen ninety two"
    assert year(1803) == "eighteen o three"  # as LibriSpeech's 19-198-0001
    assert year(1900) == "nineteen hundred"
    assert year(2010) == "two thousand and ten"


def test_out_of_range_numbers_are_refused():
    with pytest.raises(ValueError, match="only 0 to"):
        cardinal(10**15)


def test_only_canonical_roman_numerals_have_a_value():
    assert [roman(s) for s in ("I", "iv", "IX", "XL", "MCMXIV")] == [1, 4, 9, 40, 1914]
    assert [roman(s) for s in ("IIII", "VX", "IC", "civil", "")] == [None] * 5
