"""`languagemodel_mini_librispeech_books`: book text with the held-out readers'
books and words left out, from books beside real Mini LibriSpeech readers
(`mini_librispeech_mini`), and the book corpus downloaded from 127.0.0.1."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import book_lm_problem, shards
from t2t_lite.data.book_text.held_out_text import HeldOutText
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.problems import mini_librispeech

ONE_SHARD = {TRAIN: 1, EVAL: 1, TEST: 1}


class SmallBooks(book_lm_problem.BookTextLanguageModelProblem):
    speech_problem = "mini_librispeech"
    num_shards = ONE_SHARD


def _book(number, *paragraphs):
    """A Gutenberg file as most are: CRLF lines, header, credits, footer."""
    header = (
        "The Project Gutenberg EBook of Something\r\n\r\n"
        f"Release Date: 2004 [EBook #{number}]\r\n\r\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK SOMETHING ***\r\n\r\n"
        "Produced by Volunteers\r\n\r\n"
    )
    footer = "\r\n\r\n*** END OF THIS PROJECT GUTENBERG EBOOK SOMETHING ***\r\n\r\nThe licence.\r\n"
    return header + "\r\n\r\n".join(paragraphs) + footer


# Test readers 118 (ebook 10869) and 19 (ebook 121), dev readers 1970 and 6848
# (ebooks 19087 and 33556): the tree's CHAPTERS.TXT.
TEST_SENTENCE = "All that remained was to learn how he had accomplished the apparent miracles."
DEV_WORDS = "Then they untied it and led it away some of them put their clothes on it."


@pytest.fixture(autouse=True)
def no_network(monkeypatch, unreachable_url):
    monkeypatch.setenv(mini_librispeech.URL_ENV, unreachable_url)
    monkeypatch.setenv(book_lm_problem.URL_ENV, unreachable_url)


@pytest.fixture
def raw(tmp_path, mini_librispeech_mini):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(mini_librispeech_mini / "LibriSpeech")
    return raw


def _write_books(books):
    books.mkdir()
    (books / "austen").mkdir()
    (books / "austen" / "Northanger Abbey.txt").write_text(
        _book(121, "Catherine Morland was a girl.")
    )
    (books / "another edition.txt").write_text(
        _book(
            99121,
            TEST_SENTENCE,
            "Northanger Abbey.",
            "I must decide what to do I must think it over but as always.",
        )
    )
    (books / "quoting.txt").write_text(
        _book(500, "In 1850 Mr. Smith came home.", DEV_WORDS, "It rained.")
    )
    book = _book(
        84, "Chapter I.\r\nYou will rejoice to\r\nhear that no disaster.", "Caf\u00e9 au lait!"
    )
    with gzip.open(books / "pg84.txt.gz", "wt", encoding="latin-1") as handle:
        handle.write(book)
    (books / "copy").mkdir()
    (books / "copy" / "84.txt").write_text(book)  # counted once, whichever is read first
    (books / "notes.txt").write_text("Some notes without a header or a number.")


def _lines(problem, data_dir, split):
    paths = shards.existing_shards(str(data_dir), problem.name, split)
    encoder = ByteTextEncoder()
    return [
        encoder.decode(problem.decode_example(r)["targets"].numpy()[:-1].tolist())
        for r in tf.data.TFRecordDataset(paths)
    ]


def test_registered_for_mini_librispeech():
    problem = registry.problem("languagemodel_mini_librispeech_books")
    assert isinstance(problem, book_lm_problem.BookTextLanguageModelProblem)
    assert problem.speech_problem == "mini_librispeech" and not problem.has_inputs


def test_books_are_normalized_and_the_held_out_readers_books_and_words_left_out(raw, tmp_path):
    _write_books(raw / "books")
    problem = SmallBooks()
    books, text = problem.held_out(str(raw))
    assert books == {"10869", "121", "19087", "33556"}
    assert text.shares_words(TEST_SENTENCE.upper().rstrip("."))
    report = problem.generate_data(str(tmp_path / "data"), str(raw))
    train = _lines(problem, tmp_path / "data", TRAIN)
    # Lower case, as mini_librispeech writes its transcripts.
    assert sorted(train) == sorted([
        "in eighteen fifty mister smith came home", "it rained", "chapter one",
        "you will rejoice to hear that no disaster", "cafe au lait",
    ])  # fmt: skip
    assert report.splits[TRAIN].skipped == {
        book_lm_problem.SKIP_HELD_OUT_BOOK: 1,
        book_lm_problem.SKIP_OTHER_EDITION: 1,
        book_lm_problem.SKIP_HELD_OUT_SENTENCE: 1,
        book_lm_problem.SKIP_DUPLICATE: 1,
        book_lm_problem.SKIP_NO_NUMBER: 1,
    }
    speech = registry.problem("mini_librispeech")
    for split in (EVAL, TEST):
        assert _lines(problem, tmp_path / "data", split) == list(
            speech.transcripts(str(raw), split)
        )
    held_out = HeldOutText(t for s in (EVAL, TEST) for t in speech.transcripts(str(raw), s))
    assert not [line for line in train if held_out.shares_words(line.upper())]


def test_reading_stops_at_max_train_bytes_and_counts_the_rest(raw):
    _write_books(raw / "books")

    class Capped(SmallBooks):
        max_train_bytes = 1
        max_line_bytes = 12

    report = SplitReport()
    lines = list(Capped().train_lines(str(raw), report))
    assert lines and all(len(line) <= 12 for line in lines)
    whole = list(SmallBooks().train_lines(str(raw), SplitReport()))
    assert len(" ".join(lines).split()) < len(" ".join(whole).split())  # one book was read
    assert report.skipped[book_lm_problem.SKIP_OVER_LIMIT] >= 1


def test_a_held_out_chapter_of_unknown_book_is_refused(raw, tmp_path, mini_librispeech_mini):
    tree = tmp_path / "tree" / "LibriSpeech"
    tree.mkdir(parents=True)
    (tree / "train-clean-5").symlink_to(mini_librispeech_mini / "LibriSpeech" / "train-clean-5")
    missing = r"chapter \d+ \((dev|test) utterance .* is not in .*CHAPTERS.TXT"
    with pytest.raises(DataError, match=missing):
        SmallBooks().held_out(str(tmp_path / "tree"))


def _corpus_tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = _book(84, "It was a dreary night.").encode()
        info = tarfile.TarInfo("corpus/84/84.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_the_book_corpus_is_downloaded_and_unpacked_when_missing(raw, file_server):
    files = {"/lm/" + book_lm_problem.LM_CORPUS_ARCHIVE: _corpus_tarball()}
    with file_server(files) as server:
        problem = SmallBooks()
        problem.base_url = f"{server.url}/lm"
        assert list(problem.train_lines(str(raw), SplitReport())) == ["IT WAS A DREARY NIGHT"]
    assert (raw / "books" / "corpus" / "84" / "84.txt").is_file()
