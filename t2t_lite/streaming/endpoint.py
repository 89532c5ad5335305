"""Where a live stream's utterance ends: WeNet's endpoint rules on the CTC head.

A stream is cut into utterances while it runs, so a dictation or a call is
recognized utterance by utterance and the recognition state starts afresh
after each. The rules read the CTC head's best path (`stream_step`'s
`trailing_blank_frames`: frames since the last label, in seconds here),
WeNet's `runtime/core/decoder/ctc_endpoint.h` with its defaults:

1. no label yet and `silence_before_speech` seconds of blank: nothing was
   said; the audio is dropped without a final;
2. a label seen and `silence_after_speech` seconds of blank since the last
   one: the utterance is over;
3. the utterance reached `max_utterance` seconds: it ends there, said or not
   (bounding what one utterance's state holds).

They are decode hparams (`ENDPOINT_HPARAMS`), so an export carries the
rules it was made with and a server applies them unless told otherwise.
"""

from __future__ import annotations

import dataclasses
import enum

from t2t_lite.decoding.endpoint_hparams import ENDPOINT_RULES

# Each rule's decode hparam (and t2t-lite-serve flag) -> its `EndpointRules` field.
ENDPOINT_HPARAMS = {hparam: field for hparam, field, _ in ENDPOINT_RULES}
_DEFAULTS = {field: default for _, field, default in ENDPOINT_RULES}


class Endpoint(enum.Enum):
    """What the rules decide after a step."""

    NONE = "none"  # the utterance goes on
    FINAL = "final"  # it ended: give its final, start the next
    DISCARD = "discard"  # silence only: drop it, start the next


@dataclasses.dataclass(frozen=True)
class StreamStep:
    """One streaming step's answer: the partial, the seconds since its last label, the next state.

    An export's `stream_step`, or a recognizer's through `StatefulBackend`.
    """

    partial: str
    trailing_silence: float
    state: dict


@dataclasses.dataclass(frozen=True)
class EndpointRules:
    """The three rules' seconds (WeNet's defaults).

    Example:
    >>> rules = EndpointRules()
    >>> rules.check(spoke=True, trailing_silence=1.2, utterance=3.0)
    <Endpoint.FINAL: 'final'>
    >>> rules.check(spoke=False, trailing_silence=2.0, utterance=2.0)
    <Endpoint.NONE: 'none'>
    """

    silence_before_speech: float = _DEFAULTS["silence_before_speech"]
    silence_after_speech: float = _DEFAULTS["silence_after_speech"]
    max_utterance: float = _DEFAULTS["max_utterance"]

    def __post_init__(self):
        for field in dataclasses.fields(self):
            if not getattr(self, field.name) > 0:
                raise ValueError(f"EndpointRules.{field.name} must be positive seconds.")

    @classmethod
    def from_settings(cls, settings: dict) -> EndpointRules:
        """The rules decode hparams `settings` give; a rule they lack keeps its default.

        `settings` is a dict by hparam name, as an export's metadata keeps
        them.
        """
        return cls(**{
            rule: float(settings[hparam])
            for hparam, rule in ENDPOINT_HPARAMS.items()
            if hparam in settings
        })  # fmt: skip

    @classmethod
    def of(cls, config) -> EndpointRules:
        """The rules decode hparams `config` set."""
        return cls.from_settings(config.values())

    def check(self, spoke: bool, trailing_silence: float, utterance: float) -> Endpoint:
        """The endpoint decision for an utterance `utterance` seconds long.

        Its last `trailing_silence` seconds hold no label; `spoke`: it holds
        any label at all.
        """
        if utterance >= self.max_utterance:
            return Endpoint.FINAL if spoke else Endpoint.DISCARD
        if not spoke:
            return (
                Endpoint.DISCARD
                if trailing_silence >= self.silence_before_speech
                else (Endpoint.NONE)
            )
        return Endpoint.FINAL if trailing_silence >= self.silence_after_speech else Endpoint.NONE
