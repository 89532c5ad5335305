"""A request's hotwords: phrases its transcript is biased towards.

A request lists them as a hotwords file does (`PHRASE` or `PHRASE :BOOST`,
`phrase_bias.parse_phrase_lines`), in whichever way its audio came:

- the query parameter `hotwords`, once per phrase
  (`/v1/transcribe?hotwords=layla&hotwords=new%20york%20:2`), for any body;
- the multipart field `hotwords`, a phrase per line (an HTML form's text area);
- a stream's start message, `"hotwords": ["layla", "new york :2"]`.

`boost` (a query parameter or the start message's field) is the
boost of a phrase without one; without it, the decoder's (`DEFAULT_BOOST`).
The export's `transcribe_biased` signature runs the biased search, so a
request's hotwords bias it as `t2t-lite-decoder --decode_hparams=hotwords_file=`
biases the decoder. A request with hotwords is batched only with requests
with the same list (the signature takes one list per batch).
"""

from __future__ import annotations

from t2t_lite.decoding.decode_config import DEFAULT_BOOST
from t2t_lite.decoding.search.phrase_bias import PhraseListError, parse_phrase_lines

# The most phrases one request may list: each adds to every search step's work.
MAX_HOTWORDS = 256

Phrases = tuple[tuple[str, float], ...]  # ((phrase, boost), ...); () for none


class BadHotwords(ValueError):
    """A request's hotwords cannot be used; the message is one sentence for the client."""


def _boost(value) -> float:
    """`boost` as sent (None: the decoder's default)."""
    if value is None:
        return DEFAULT_BOOST
    try:
        boost = float(value)
    except (TypeError, ValueError):
        boost = -1.0
    if isinstance(value, bool) or not 0 < boost < float("inf"):
        raise BadHotwords(f"the hotwords' boost must be a number > 0, got {value!r}.")
    return boost


def request_phrases(lines, boost=None) -> Phrases:
    """The phrase list of a request's hotword lines and its `boost`.

    Args:
        lines: the request's hotwords, one phrase each (a line may also hold
            several phrases, one per line, as a multipart field does).
        boost: `boost` as sent, or None.

    Raises:
        BadHotwords: a hotword that is not text, a bad boost, or more than
            `MAX_HOTWORDS` phrases.

    Example:
    >>> request_phrases(["Layla", "new york :2"], "1.5")
    (('Layla', 1.5), ('new york', 2.0))
    """
    if not isinstance(lines, list | tuple) or not all(isinstance(line, str) for line in lines):
        raise BadHotwords(
            'hotwords must be a list of phrases (strings), e.g. ["layla", "new york :2"].'
        )
    split = [part for line in lines for part in line.splitlines()]
    try:
        phrases = parse_phrase_lines(split, _boost(boost), "hotword")
    except PhraseListError as error:
        raise BadHotwords(str(error)) from error
    if len(phrases) > MAX_HOTWORDS:
        raise BadHotwords(
            f"the request lists {len(phrases)} hotwords; this server takes at most {MAX_HOTWORDS}."
        )
    return tuple(phrases)


def refuse_unbiased(model, phrases: Phrases) -> None:
    """Raises BadHotwords if `phrases` are listed and `model` cannot bias its search.

    A `.tflite`, or a SavedModel exported before `transcribe_biased`, cannot.
    """
    if phrases and not getattr(model, "biases", False):
        raise BadHotwords(
            f"this server's model ({model.version}) takes no hotwords (a .tflite export, or a "
            "SavedModel exported without transcribe_biased): send the request without them."
        )
