"""A book's prose as LibriSpeech writes what its readers said.

One sentence a line, upper case, numbers and abbreviations spelled out,
punctuation dropped.

LibriSpeech's transcripts (and OpenSLR 11's normalized book text, built for
the corpus's language models) keep letters, spaces and the apostrophes of
"DON'T" and "O'CLOCK", and spell out what a reader says for "Mr.", "1850"
or "Chapter IV". A language model fused with a recognizer of that corpus
must learn the same words, so the rules here follow those transcripts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from t2t_lite.data.book_text.spoken_numbers import cardinal, ordinal, roman, year

# What readers say for an abbreviation, as LibriSpeech's transcripts write it.
ABBREVIATIONS = {
    "mr": "mister",
    "mrs": "missus",
    "messrs": "messieurs",
    "dr": "doctor",
    "st": "saint",
    "capt": "captain",
    "col": "colonel",
    "gen": "general",
    "lieut": "lieutenant",
    "lt": "lieutenant",
    "sgt": "sergeant",
    "rev": "reverend",
    "prof": "professor",
    "hon": "honourable",
    "jr": "junior",
    "sr": "senior",
    "mt": "mount",
    "vol": "volume",
    "ch": "chapter",
    "viz": "namely",
    "etc": "et cetera",
}
# Words after which a Roman numeral is a number ("CHAPTER IX": "CHAPTER NINE").
_NUMBERED = "chapter book part volume act scene canto stave letter section psalm".split()

_PUNCTUATION_MAP = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": " ", "\u2013": " "}
)
_ABBREVIATION = re.compile(r"\b(" + "|".join(ABBREVIATIONS) + r")\.", re.I)
# A sentence ends at ".", "!" or "?" (and a closing quote) before a capital.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])")
_ROMAN_AFTER = re.compile(r"\b(" + "|".join(_NUMBERED) + r")\s+([IVXLCDM]+)\b", re.I)
_ROMAN_AFTER_NAME = re.compile(r"(?<=[a-z] )([IVXLC]{2,}|[VX])\b")
_CURRENCY = re.compile(r"([£$])\s?(\d+)")
_ORDINAL = re.compile(r"\b(\d+)(st|nd|rd|th|d)\b", re.I)
_DECIMAL = re.compile(r"\b(\d+)\.(\d+)\b")
_THOUSANDS = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")
_NUMBER = re.compile(r"\d+")
_FOOTNOTE_MARK = re.compile(r"\[\d+\]")
_NOT_SPOKEN = re.compile(r"[^A-Za-z' ]+")
_LOOSE_APOSTROPHE = re.compile(r"(?<![A-Za-z])'|'(?![A-Za-z])")


def _spell_numbers(text: str) -> str:
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _CURRENCY.sub(
        lambda m: f"{cardinal(int(m.group(2)))} {'pounds' if m.group(1) == '£' else 'dollars'}",
        text,
    )
    text = _ORDINAL.sub(lambda m: f" {ordinal(int(m.group(1)))} ", text)
    text = _DECIMAL.sub(
        lambda m: (
            f"{cardinal(int(m.group(1)))} point {' '.join(cardinal(int(d)) for d in m.group(2))}"
        ),
        text,
    )

    def number(match: re.Match) -> str:
        digits = match.group(0)
        if len(digits) > 15:
            return " ".join(cardinal(int(d)) for d in digits)
        return f" {year(int(digits)) if len(digits) == 4 else cardinal(int(digits))} "

    return _NUMBER.sub(number, text)


def _spell_numerals(text: str) -> str:
    def after_word(match: re.Match) -> str:
        value = roman(match.group(2))
        return f"{match.group(1)} {cardinal(value)}" if value else match.group(0)

    def after_name(match: re.Match) -> str:
        value = roman(match.group(1))
        return f"the {ordinal(value)}" if value else match.group(0)

    text = _ROMAN_AFTER.sub(after_word, text)
    return _ROMAN_AFTER_NAME.sub(after_name, text)


def normalize_sentence(sentence: str) -> str:
    """One sentence as LibriSpeech writes it (upper case; may come back empty).

    Example:
      >>> normalize_sentence("Mr. Darcy paid \u00a35 on the 3rd of May, 1811--\u201cdon't!\u201d")
      "MISTER DARCY PAID FIVE POUNDS ON THE THIRD OF MAY EIGHTEEN ELEVEN DON'T"
      >>> normalize_sentence("CHAPTER IX. King George III")
      'CHAPTER NINE KING GEORGE THE THIRD'
    """
    text = _FOOTNOTE_MARK.sub(" ", sentence.translate(_PUNCTUATION_MAP))
    text = _ABBREVIATION.sub(lambda m: ABBREVIATIONS[m.group(1).lower()], text)
    text = _spell_numerals(text)
    text = text.replace("&", " and ").replace("%", " percent ")
    text = _spell_numbers(text)
    # Accents off (cafe, naive); what has no ASCII form goes.
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = _NOT_SPOKEN.sub(" ", text.replace("-", " "))
    text = _LOOSE_APOSTROPHE.sub(" ", text)
    return " ".join(text.split()).upper()


def split_sentences(paragraph: str) -> list[str]:
    """A paragraph (lines joined) cut where a sentence ends before a capital.

    Abbreviations are spelled out first (`normalize_sentence` again is then a
    no-op for them), so "Mr. Darcy" does not end a sentence.

    Example:
      >>> split_sentences('He came.  "Did Mr. Smith?" she asked.\\nNo.')
      ['He came.', '"Did mister Smith?" she asked.', 'No.']
    """
    text = " ".join(paragraph.split())
    text = _ABBREVIATION.sub(lambda m: ABBREVIATIONS[m.group(1).lower()], text)
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def book_sentences(body: str) -> Iterator[str]:
    """Every normalized, non-empty sentence of a book's body, in order.

    Args:
      body: the book's text (`gutenberg.book_body`): paragraphs separated by
        blank lines, lines wrapped anywhere.

    Example:
      >>> list(book_sentences("It was 1850.\\nHe said no.\\n\\nCHAPTER II."))
      ['IT WAS EIGHTEEN FIFTY', 'HE SAID NO', 'CHAPTER TWO']
    """
    for paragraph in re.split(r"\n\s*\n", body):
        for sentence in split_sentences(paragraph):
            normalized = normalize_sentence(sentence)
            if normalized:
                yield normalized
