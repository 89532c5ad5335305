"""A transcription request's audio, whichever way it came.

- a WAV or FLAC file as the body (`Content-Type: audio/wav`, `audio/flac`,
  any other `audio/*` soundfile decodes, or `application/octet-stream`);
- the same as the multipart/form-data field `file` (an HTML form's upload);
- raw PCM: `audio/pcm;rate=16000` (little-endian 16-bit, or
  `encoding=f32le` for float32; `channels=2` interleaved) or `audio/L16;rate=16000`
  (RFC 2586: big-endian 16-bit).

Every way ends as `audio_io`'s float32 mono at the model's rate, so a file
sent to the server reads as `t2t-lite-decoder` reads it from disk. A bad
request raises `BadAudio` with one sentence for the client.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.data.audio_io import AudioError, from_int16_pcm, read_audio_bytes, to_mono

PCM_TYPES = {  # media type -> (encoding parameter -> NumPy dtype)
    "audio/pcm": {"s16le": "<i2", "f32le": "<f4"},
    "audio/l16": {"s16be": ">i2"},
}
DEFAULT_ENCODING = {"audio/pcm": "s16le", "audio/l16": "s16be"}


class BadAudio(ValueError):
    """The request's audio cannot be read; the message is one sentence for the client."""


def parse_content_type(header: str | None) -> tuple[str, dict[str, str]]:
    """A Content-Type header -> (media type in lower case, its parameters).

    Example:
    >>> parse_content_type("audio/PCM; rate=16000; encoding=s16le")
    ('audio/pcm', {'rate': '16000', 'encoding': 's16le'})
    """
    media_type, *pairs = (header or "").split(";")
    parameters = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        parameters[name.strip().lower()] = value.strip().strip('"')
    return media_type.strip().lower(), parameters


@dataclasses.dataclass(frozen=True)
class PcmFormat:
    """Raw PCM's layout: sample type, rate and interleaved channels.

    Example:
    >>> PcmFormat.parse("audio/pcm", {"rate": "8000"})
    PcmFormat(dtype='<i2', rate=8000, channels=1)
    """

    dtype: str
    rate: int
    channels: int = 1

    @classmethod
    def parse(cls, media_type: str, parameters: dict) -> PcmFormat:
        """From a PCM media type (`PCM_TYPES`) and its parameters.

        Raises:
            BadAudio: no or a bad `rate` or `channels`, or an unknown encoding.
        """
        encodings = PCM_TYPES[media_type]
        encoding = str(parameters.get("encoding", DEFAULT_ENCODING[media_type])).lower()
        if encoding not in encodings:
            raise BadAudio(
                f"{media_type} encoding {encoding!r} is not one of {', '.join(sorted(encodings))}."
            )
        try:
            rate = int(parameters.get("rate", ""))
            channels = int(parameters.get("channels", "1"))
        except (TypeError, ValueError):
            rate = channels = 0
        if rate <= 0 or channels <= 0:
            raise BadAudio(
                f"raw PCM needs its sample rate and channels as positive integers, e.g. "
                f"Content-Type: {media_type};rate=16000;channels=1."
            )
        return cls(encodings[encoding], rate, channels)

    def samples(self, body: bytes) -> np.ndarray:
        """`body` -> float32 `[samples, channels]` at `rate`.

        Raises:
            BadAudio: a body that is not whole samples.
        """
        dtype = np.dtype(self.dtype)
        if len(body) % (dtype.itemsize * self.channels):
            raise BadAudio(
                f"the audio ({len(body)} bytes) is not whole {dtype.itemsize * 8}-bit samples "
                f"of {self.channels} channel(s)."
            )
        samples = np.frombuffer(body, dtype).reshape(-1, self.channels)
        if dtype.kind == "i":
            return from_int16_pcm(samples.astype(np.int16))
        return samples.astype(np.float32)


def pcm_samples(body: bytes, media_type: str, parameters: dict, sample_rate: int) -> np.ndarray:
    """Raw PCM -> float32 mono at `sample_rate`.

    Raises:
        BadAudio: see `PcmFormat`.

    Example:
    >>> pcm_samples(np.array([0, 32767], "<i2").tobytes(), "audio/pcm", {"rate": "16000"}, 16000)
    array([0., 1.], dtype=float32)
    """
    pcm = PcmFormat.parse(media_type, parameters)
    return to_mono(pcm.samples(body), pcm.rate, sample_rate, "the request's PCM")


def request_audio(body: bytes, media_type: str, parameters: dict, sample_rate: int) -> np.ndarray:
    """A request body -> float32 mono at `sample_rate`.

    Args:
        body: the body (or the multipart field's content).
        media_type: its Content-Type without parameters, lower case.
        parameters: the Content-Type's parameters.
        sample_rate: the model's rate.

    Raises:
        BadAudio: unreadable audio, an unsupported type, or no audio.
    """
    if not body:
        raise BadAudio("the request has no audio: send a WAV or FLAC file or raw PCM as the body.")
    if media_type in PCM_TYPES:
        return pcm_samples(body, media_type, parameters, sample_rate)
    if not (media_type.startswith("audio/") or media_type == "application/octet-stream"):
        raise BadAudio(
            f"Content-Type {media_type or 'none'} is not audio: send audio/wav, audio/flac, "
            "audio/pcm;rate=N, or multipart/form-data with the field 'file'."
        )
    try:
        return read_audio_bytes(body, "the request's audio", sample_rate)
    except AudioError as error:
        raise BadAudio(str(error)) from error
