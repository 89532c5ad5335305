"""Numbers as a reader says them: cardinals, ordinals and years, in words.

LibriSpeech's transcripts spell every number out as it was read ("IN
EIGHTEEN FIFTY", "THE THIRD DAY", "TWO HUNDRED AND FIFTY POUNDS"), and its
book text (OpenSLR 11) was normalized the same way; a language model of
book text must see the words the recognizer is trained to write.
"""

from __future__ import annotations

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINAL_ENDINGS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def _under_hundred(n: int) -> str:
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f" {_ONES[ones]}" if ones else "")


def _under_thousand(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    if not hundreds:
        return _under_hundred(rest)
    words = f"{_ONES[hundreds]} hundred"
    # British and American readers of these books alike say "and" here.
    return words + (f" and {_under_hundred(rest)}" if rest else "")


def cardinal(n: int) -> str:
    """`n` in words, as read aloud.

    Args:
      n: a whole number, 0 to below 10**15.

    Returns:
      Lower-case words: "two hundred and fifty", "one thousand and five".

    Example:
      >>> cardinal(1250)
      'one thousand two hundred and fifty'
    """
    if n < 0 or n >= 10**15:
        raise ValueError(f"cardinal({n}): only 0 to 10**15 - 1 are spelled")
    if n < 1000:
        return _under_thousand(n)
    parts = []
    for scale, name in _SCALES:
        count, n = divmod(n, scale)
        if count:
            parts.append(f"{_under_thousand(count)} {name}")
    if n:
        parts.append(("and " if n < 100 else "") + _under_thousand(n))
    return " ".join(parts)


def ordinal(n: int) -> str:
    """`n` as an ordinal in words.

    Example:
      >>> ordinal(21), ordinal(12), ordinal(100)
      ('twenty first', 'twelfth', 'one hundredth')
    """
    words = cardinal(n).split()
    last = words[-1]
    if last in _ORDINAL_ENDINGS:
        words[-1] = _ORDINAL_ENDINGS[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def year(n: int) -> str:
    """A year as it is read: in pairs of digits where that is how people say it.

    Example:
      >>> year(1850), year(1905), year(1900)
      ('eighteen fifty', 'nineteen o five', 'nineteen hundred')
      >>> year(2005), year(800)
      ('two thousand and five', 'eight hundred')
    """
    if not 1100 <= n <= 1999:
        return cardinal(n)
    high, low = divmod(n, 100)
    if low == 0:
        return f"{cardinal(high)} hundred"
    # LibriSpeech writes the zero as its readers say it: "EIGHTEEN O THREE".
    return f"{cardinal(high)} {'o ' if low < 10 else ''}{cardinal(low)}"


_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def roman(text: str) -> int | None:
    """The value of a Roman numeral in canonical form, else None.

    Example:
      >>> roman("XIV"), roman("mcmix"), roman("IIII"), roman("dim")
      (14, 1909, None, None)
    """
    text = text.lower()
    if not text or any(c not in _ROMAN for c in text):
        return None
    total = 0
    for i, c in enumerate(text):
        value = _ROMAN[c]
        total += -value if i + 1 < len(text) and _ROMAN[text[i + 1]] > value else value
    # Only the canonical spelling (so "dim" and "mild" stay words; callers read
    # numerals only where a number is expected: "CHAPTER IX").
    return total if 0 < total < 4000 and _to_roman(total) == text else None


def _to_roman(n: int) -> str:
    out = []
    for value, letters in (
        (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
        (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
    ):  # fmt: skip
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)
