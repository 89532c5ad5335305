"""A Gutenberg file's book: header, footer and volunteers' notes off, its number found."""

from t2t_lite.data.book_text.gutenberg import book_body, ebook_number

NEW_STYLE = """The Project Gutenberg EBook of Emma, by Jane Austen

This eBook is for the use of anyone anywhere at no cost.

Release Date: August, 1994 [EBook #158]
Last updated: January 21, 2010

*** START OF THIS PROJECT GUTENBERG EBOOK EMMA ***




Produced by An Anonymous Volunteer



EMMA

Emma Woodhouse, handsome, clever, and rich.

[Illustration: Emma at the window]

She was the youngest of the two daughters.

End of the Project Gutenberg EBook of Emma, by Jane Austen

*** END OF THIS PROJECT GUTENBERG EBOOK EMMA ***

Section 1. General Terms of Use and Redistributing Project Gutenberg-tm
"""

OLD_STYLE = """The Project Gutenberg Etext of Tom Sawyer
[Etext #74]
**The Project Gutenberg Etext**
*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*

TOM!
No answer.
End of this Project Gutenberg Etext of Tom Sawyer
"""


def test_the_book_is_what_lies_between_the_markers():
    body = book_body(NEW_STYLE.replace("\n", "\r\n"))
    assert body.split("\n\n") == [
        "EMMA",
        "Emma Woodhouse, handsome, clever, and rich.",
        "She was the youngest of the two daughters.",
    ]
    assert book_body(OLD_STYLE) == "TOM!\nNo answer."


def test_a_file_without_markers_is_taken_whole():
    assert book_body("Call me Ishmael.\n\nSome years ago.") == "Call me Ishmael.\n\nSome years ago."


def test_the_number_comes_from_the_header_before_the_file_name():
    assert ebook_number(NEW_STYLE, "/books/999.txt") == "158"
    assert ebook_number(OLD_STYLE) == "74"
    assert ebook_number("Release Date: May 2021 [eBook #65432]") == "65432"
    assert ebook_number("no header", "/b/pg1342.txt") == "1342"
    assert ebook_number("no header", "/b/1342-0.txt") == "1342"
    assert ebook_number("no header", "/b/Emma.txt") is None
