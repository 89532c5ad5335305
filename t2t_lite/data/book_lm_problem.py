"""A language model of the books a LibriSpeech problem's readers read from.

    @registry.register_problem
    class LanguagemodelMyLibrispeechBooks(BookTextLanguageModelProblem):
        speech_problem = "my_librispeech_problem"

    t2t-lite-datagen --problem=languagemodel_my_librispeech_books --data_dir=$DATA --tmp_dir=$RAW

Train is book text: every Project Gutenberg plain-text file under
`$RAW/books/` (any depth, `.txt` or `.txt.gz`), with Gutenberg's header and
footer stripped and each sentence normalized as LibriSpeech's transcripts
are (`book_text`), then written in the speech problem's own form (lower
case for `mini_librispeech`) in its target vocabulary, so shallow fusion
(`lm_dir`, `lm_weight`) adds log probabilities of exactly what the
recognizer writes. Dev and test are the speech problem's dev and test
transcripts, as for `TranscriptLanguageModelProblem`.

Where `$RAW/books/` is missing, OpenSLR 11's per-book corpus
(`librispeech-lm-corpus.tgz`, the 14,500 books LibriSpeech's language
models were built from) is downloaded and unpacked there (env
`T2T_LITE_LIBRISPEECH_LM_URL` names a mirror). Not its normalized text
(`librispeech-lm-norm.txt.gz`): that is one file of sentences with no book
boundaries, which keeps out LibriSpeech's own dev and test books but not
the books of readers a smaller problem holds out of its training set
(Mini LibriSpeech's test and dev readers are train-clean-100 readers), and
they could not be taken out.

Nothing the held-out readers read reaches the text: a book of any dev or
test chapter (`CHAPTERS.TXT` gives each chapter's Gutenberg number), a file
whose number cannot be told, and a sentence sharing a run of words with a
dev or test transcript (`book_text/held_out_text.py`) are left out and counted. Book
order is shuffled with a fixed seed and reading stops at
`max_train_bytes` of text (the rest counted), so a large corpus gives a
sample of many books rather than the first few.
"""

from __future__ import annotations

import gzip
import os
import random
from collections.abc import Iterator

from t2t_lite.data import librispeech_reader
from t2t_lite.data.book_text.book_sentences import book_sentences
from t2t_lite.data.book_text.gutenberg import book_body, ebook_number
from t2t_lite.data.book_text.held_out_text import SAME_BOOK_SENTENCES, HeldOutText
from t2t_lite.data.download import download
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.safe_tar import safe_extract_tar
from t2t_lite.data.transcript_lm_problem import TranscriptLanguageModelProblem

BOOKS_DIR = "books"
OPENSLR_LM_URL = "https://www.openslr.org/resources/11"
LM_CORPUS_ARCHIVE = "librispeech-lm-corpus.tgz"
URL_ENV = "T2T_LITE_LIBRISPEECH_LM_URL"
BOOK_ORDER_SEED = 11
# A sentence longer than this is cut at word boundaries: LibriSpeech's
# utterances are up to about 35 s, 300 bytes of transcript and rarely more.
MAX_LINE_BYTES = 300

SKIP_HELD_OUT_BOOK = "books read by held-out readers"
SKIP_OTHER_EDITION = "books sharing sentences with held-out transcripts"
SKIP_NO_NUMBER = "books without a Gutenberg number"
SKIP_UNREADABLE = "unreadable book files"
SKIP_HELD_OUT_SENTENCE = "sentences sharing words with held-out transcripts"
SKIP_OVER_LIMIT = "books over max_train_bytes"
SKIP_DUPLICATE = "second copies of a book"


def _book_files(books_dir: str) -> list[str]:
    found = []
    for folder, _, names in os.walk(books_dir):
        found += [os.path.join(folder, n) for n in names if n.endswith((".txt", ".txt.gz"))]
    return sorted(found)


def _read_text(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # Gutenberg's older files


def _cut(sentence: str, max_bytes: int) -> Iterator[str]:
    """A sentence longer than `max_bytes` in pieces at word boundaries."""
    piece: list[str] = []
    for word in sentence.split():
        if piece and len(" ".join(piece + [word])) > max_bytes:
            yield " ".join(piece)
            piece = []
        piece.append(word[:max_bytes])
    if piece:
        yield " ".join(piece)


class BookTextLanguageModelProblem(TranscriptLanguageModelProblem):
    """Book text for a LibriSpeech-layout speech problem (see the module docstring).

    Class attributes:
      speech_problem: the registered LibriSpeech problem; it must list its
        splits' utterances (`split_files`) and say how it writes a transcript
        (`written_form`).
      max_train_bytes: how much normalized text train holds at most: as
        much as `t2t-lite-ngram` counts in the memory of a 24 GB machine
        (more text kept lowering the book 4-gram's WER; docs/benchmarks.md).
      max_line_bytes: a longer sentence is cut into lines of at most this.
      base_url: where `librispeech-lm-corpus.tgz` comes from; None means
        env `T2T_LITE_LIBRISPEECH_LM_URL`, else OpenSLR 11.
    """

    num_shards = {TRAIN: 8, EVAL: 1, TEST: 1}
    max_train_bytes: int = 400_000_000
    max_line_bytes: int = MAX_LINE_BYTES
    base_url: str | None = None

    def generate_examples(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[dict]:
        if split != TRAIN:
            return super().generate_examples(data_dir, tmp_dir, split, report)
        speech = self.speech()
        lines = self.train_lines(tmp_dir, report)
        pairs = ({"targets": speech.written_form(line)} for line in lines)
        return self.encode_pairs(data_dir, pairs, report)

    def held_out(self, tmp_dir: str) -> tuple[set[str], HeldOutText]:
        """What a dev or test chapter read, from one listing of those splits.

        Returns:
            `(books, text)`: the Gutenberg numbers of the books the chapters
            were read from, and their transcripts as runs of words to keep out.

        Raises:
            DataError: a held-out chapter is missing from `CHAPTERS.TXT`.
        """
        chapter_books = librispeech_reader.read_chapter_books(tmp_dir)
        books, transcripts = set(), []
        for split in (EVAL, TEST):
            for item in self.speech().split_files(tmp_dir, split, SplitReport()):
                chapter = librispeech_reader.chapter_of(item.utterance_id)
                if chapter not in chapter_books:
                    raise DataError(
                        f"{self.name}: chapter {chapter} ({split} utterance "
                        f"{item.utterance_id}) is not in {tmp_dir}'s LibriSpeech/CHAPTERS.TXT, "
                        "so its book cannot be kept out of the text; put LibriSpeech's "
                        "CHAPTERS.TXT there and run again."
                    )
                books.add(chapter_books[chapter])
                transcripts.append(item.transcript)
        return books, HeldOutText(transcripts)

    def books_dir(self, tmp_dir: str) -> str:
        """`$tmp_dir/books/`, downloaded and unpacked there if missing.

        Raises:
            DataError: no books there and the download failed (the message
                says where to put them).
        """
        books_dir = os.path.join(tmp_dir, BOOKS_DIR)
        if os.path.isdir(books_dir):
            return books_dir
        base = self.base_url or os.environ.get(URL_ENV) or OPENSLR_LM_URL
        archive = os.path.join(tmp_dir, LM_CORPUS_ARCHIVE)
        if not os.path.exists(archive):
            advice = (
                f"put Project Gutenberg plain-text books in {books_dir}/, or download "
                f"{LM_CORPUS_ARCHIVE} from {OPENSLR_LM_URL} into {tmp_dir} (or set {URL_ENV} "
                "to a mirror), then run again"
            )
            download(f"{base.rstrip('/')}/{LM_CORPUS_ARCHIVE}", archive, advice=advice)
        os.makedirs(books_dir + ".partial", exist_ok=True)
        safe_extract_tar(archive, books_dir + ".partial")
        os.replace(books_dir + ".partial", books_dir)
        return books_dir

    def train_lines(self, tmp_dir: str, report: SplitReport) -> Iterator[str]:
        """The books' normalized sentences (upper case), held-out text left out.

        Raises:
            DataError: no books, or a held-out chapter of unknown book.
        """
        held_out_books, held_out = self.held_out(tmp_dir)
        books_dir = self.books_dir(tmp_dir)
        paths = _book_files(books_dir)
        if not paths:
            raise DataError(
                f"{self.name}: {books_dir} holds no .txt or .txt.gz book; put Project "
                "Gutenberg plain-text books there and run again."
            )
        random.Random(BOOK_ORDER_SEED).shuffle(paths)
        written, seen = 0, set()
        for index, path in enumerate(paths):
            if written >= self.max_train_bytes:
                report.skipped[SKIP_OVER_LIMIT] += len(paths) - index
                return
            try:
                text = _read_text(path)
            except OSError:
                report.skip(SKIP_UNREADABLE)
                continue
            number = ebook_number(text, path)
            if number is None:
                report.skip(SKIP_NO_NUMBER)
                continue
            if number in held_out_books:
                report.skip(SKIP_HELD_OUT_BOOK)
                continue
            if number in seen:  # two copies, or .txt and .txt.gz
                report.skip(SKIP_DUPLICATE)
                continue
            seen.add(number)
            sentences = list(book_sentences(book_body(text)))
            shared = [held_out.shares_words(s) for s in sentences]
            if sum(shared) >= SAME_BOOK_SENTENCES:
                report.skip(SKIP_OTHER_EDITION)
                continue
            for sentence, is_shared in zip(sentences, shared, strict=True):
                if is_shared:
                    report.skip(SKIP_HELD_OUT_SENTENCE)
                    continue
                for line in _cut(sentence, self.max_line_bytes):
                    written += len(line) + 1
                    yield line
