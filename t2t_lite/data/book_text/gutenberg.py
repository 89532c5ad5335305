"""A Project Gutenberg file's book: its ebook number and what lies between header and footer.

Gutenberg's files wrap each book in a header (title, release date, "[EBook
#N]", the start marker) and a footer (the end marker and the licence);
older files carry "The Small Print!" instead. None of that was read aloud,
so a language model of what LibriVox readers say must not learn it.
"""

from __future__ import annotations

import os
import re

_START = re.compile(
    r"^\s*(\*{3}\s*START OF (THIS|THE) PROJECT GUTENBERG|\*END\*THE SMALL PRINT)", re.I | re.M
)
_END = re.compile(
    r"^\s*(\*{3}\s*END OF (THIS|THE) PROJECT GUTENBERG|End of (the |this )?Project Gutenberg)",
    re.I | re.M,
)
_NUMBER_IN_TEXT = re.compile(r"\[\s*E(?:-?Book|-?text)\s*#\s*(\d+)\s*\]", re.I)
_NUMBER_IN_NAME = re.compile(r"^(?:pg)?(\d+)(?:-\d+)?(?:\.txt)?(?:\.gz)?$", re.I)
# Paragraphs a volunteer added, not the author.
_NOT_THE_BOOK = re.compile(
    r"^\s*(Produced by|E-?text prepared by|Transcriber'?s? note|\[Illustration)", re.I
)
# How far into a file its header may reach (a few kilobytes in practice).
_HEADER_CHARS = 20_000


def ebook_number(text: str, filename: str = "") -> str | None:
    """The book's Project Gutenberg number, or None.

    The header's "[EBook #N]", else the file's name ("1342.txt", "pg1342.txt",
    "1342-0.txt"), else its folder's (OpenSLR 11's corpus keeps each book
    in a folder named by its number).

    Example:
      >>> ebook_number("Title: Emma\\nRelease Date: 1994 [EBook #%d]\\n" % 158)
      '158'
      >>> ebook_number("no header", "/books/pg84.txt")
      '84'
      >>> ebook_number("no header", "/books/1342/pride_and_prejudice.txt")
      '1342'
    """
    found = _NUMBER_IN_TEXT.search(text[:_HEADER_CHARS])
    if found:
        return str(int(found.group(1)))
    for name in (os.path.basename(filename), os.path.basename(os.path.dirname(filename))):
        named = _NUMBER_IN_NAME.match(name)
        if named:
            return str(int(named.group(1)))
    return None


def book_body(text: str) -> str:
    """The book without Gutenberg's header, footer and volunteers' notes.

    A file without the markers is taken whole (a book someone already
    stripped); paragraphs that credit the transcribers or describe an
    illustration are dropped wherever they are.

    Example:
      >>> book_body("Header\\n*** START OF THE PROJECT GUTENBERG EBOOK EMMA ***\\n"
      ...           "Produced by X\\n\\nEmma Woodhouse.\\n*** END OF THE PROJECT GUTENBERG EBOOK")
      'Emma Woodhouse.'
    """
    text = text.replace("\r\n", "\n")
    starts = list(_START.finditer(text[: _HEADER_CHARS * 4]))
    if starts:
        begin = text.find("\n", starts[-1].end())
        text = text[begin + 1 :] if begin >= 0 else ""
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(p.strip() for p in paragraphs if p.strip() and not _NOT_THE_BOOK.match(p))
