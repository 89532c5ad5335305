"""Offline speech synthesis with eSpeak NG, for the built-in spoken corpus.

eSpeak NG comes from PyPI's `espeakng-loader` (the shared library plus its
voice data, no system package, no network) and is driven through ctypes in
AUDIO_OUTPUT_SYNCHRONOUS mode: `espeak_Synth` returns once the text is spoken,
and a synth callback collects the int16 samples at the library's rate
(22050 Hz).

Why a helper process: eSpeak NG keeps its synthesizer state in C globals, and
part of it is never reset between utterances (the pitch "flutter" position,
automatic gain and cycle counters in wavegen.c). Calling it in-process, the
same text and voice give different samples (and lengths) depending on what was
spoken before, so a corpus would depend on generation order. Instead, each
`EspeakSynthesizer` starts one small helper process that loads and initializes
the library once and never speaks; every request is served by a `fork()` of
that pristine process, which speaks once and exits. Every utterance therefore
starts from the same state: identical arguments give identical samples, in any
order, in any process (the fork also seeds the noise generators that
breathy variants use). A fork costs about a millisecond.

Thread and process safety: eSpeak's C state lives only in the helper process,
never in the caller. One synthesizer's requests are serialized by a lock, so
an instance may be shared by threads; separate instances (one per worker
process, say) are independent. If the calling process forks, the child starts
its own helper on first use instead of sharing the parent's pipes.

This module is the caller's side; the code the helper runs (the ctypes
binding, the fork-per-request loop and the pipe protocol) is `espeak_helper`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from typing import NamedTuple

import numpy as np

from t2t_lite.data.spoken_synth import espeak_helper

# speak_lib.h facts the caller checks and decodes (the helper owns the rest).
RATE_MIN_WPM, RATE_MAX_WPM = 80, 450  # espeakRATE_MINIMUM / _MAXIMUM
_GENDERS = {0: "unspecified", 1: "male", 2: "female"}


class EspeakError(RuntimeError):
    """eSpeak NG is missing, failed to start, or failed to synthesize."""


class UnknownVoiceError(EspeakError, ValueError):
    """The requested voice or variant is not in eSpeak NG's voice data."""


@dataclasses.dataclass(frozen=True)
class Voice:
    """One eSpeak NG voice (a language or accent).

    Attributes:
      language: its primary language code, e.g. "en-us"; pass this (or
        `identifier`) as `voice` to `EspeakSynthesizer.synthesize`.
      name: the human-readable name, e.g. "English (America)".
      identifier: the voice file, e.g. "gmw/en-US".
      gender: "male", "female" or "unspecified".
      languages: every language code the voice serves, by eSpeak's priority.
    """

    language: str
    name: str
    identifier: str
    gender: str
    languages: tuple[str, ...]


class WordEvent(NamedTuple):
    """Where eSpeak NG started speaking one word of the text.

    Attributes:
      text_start: the word's first character, a 0-based index into the text.
      text_length: the word's length in characters, as eSpeak NG read it.
      sample: the index of the output sample where the word starts, at the
        synthesizer's rate.
      phonemes: `(name, sample)` of each phoneme eSpeak NG spoke for the
        word, in order: its mnemonic (e.g. "D", "'A@") and where it starts.
        A multi-word dictionary entry ("in the") is one word whose
        phonemes are those of all its words.
    """

    text_start: int
    text_length: int
    sample: int
    phonemes: tuple[tuple[str, int], ...] = ()


def _find_espeak() -> tuple[str, str]:
    """Paths of libespeak-ng and its data directory from espeakng-loader."""
    try:
        import espeakng_loader
    except ImportError as error:
        raise EspeakError(
            f"eSpeak NG is not installed; install it with: {espeak_helper.INSTALL_HINT}."
        ) from error
    library_path = espeakng_loader.get_library_path()
    try:
        data_path = espeakng_loader.get_data_path()
    except RuntimeError as error:
        raise EspeakError(
            f"eSpeak NG's voice data is missing ({error}); reinstall it "
            f"with: {espeak_helper.INSTALL_HINT}."
        ) from error
    if not os.path.isfile(library_path):
        raise EspeakError(
            f"The eSpeak NG library {library_path!r} is missing; reinstall it "
            f"with: {espeak_helper.INSTALL_HINT}."
        )
    return library_path, data_path


class EspeakSynthesizer:
    """Text-to-speech with eSpeak NG, deterministic and isolated in a helper process.

    Args:
      library_path: libespeak-ng to load; default the one from espeakng-loader.
      data_path: its `espeak-ng-data` directory; default espeakng-loader's.

    Raises:
      EspeakError: eSpeak NG is not installed or does not initialize.

    Example:
      >>> with EspeakSynthesizer() as synthesizer:  # doctest: +SKIP
      ...     waveform, rate = synthesizer.synthesize("hello world", voice="en-us")
      >>> rate, waveform.dtype  # doctest: +SKIP
      (22050, dtype('float32'))
    """

    def __init__(self, library_path: str | None = None, data_path: str | None = None) -> None:
        if library_path is None or data_path is None:
            default_library, default_data = _find_espeak()
            library_path = library_path or default_library
            data_path = data_path or default_data
        self._library_path = library_path
        self._data_path = data_path
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._catalog: tuple[list[Voice], list[str]] | None = None
        # (identifier, language code) -> eSpeak's priority, lower is preferred.
        self._priorities: dict[tuple[str, str], int] = {}
        with self._lock:
            self._sample_rate = self._ensure_worker().sample_rate

    @property
    def sample_rate(self) -> int:
        """The library's output sample rate in Hz (22050 for eSpeak NG)."""
        return self._sample_rate

    def list_voices(self, language_prefix: str = "en") -> list[Voice]:
        """Voices serving a language whose code starts with `language_prefix`.

        Args:
          language_prefix: e.g. "en" for every English accent, "" for all.

        Returns:
          `Voice`s sorted by primary language code.

        Example:
          >>> [v.language for v in EspeakSynthesizer().list_voices("en")][:3]  # doctest: +SKIP
          ['en-029', 'en-gb', 'en-gb-scotland']
        """
        prefix = language_prefix.lower()
        voices, _ = self._voice_catalog()
        return [
            voice
            for voice in voices
            if any(language.startswith(prefix) for language in voice.languages)
        ]

    def list_variants(self) -> list[str]:
        """Names of the voice variants (timbre/pitch presets), e.g. "f3", "klatt".

        A variant applies to any voice: `synthesize(..., variant="f3")`.
        """
        _, variants = self._voice_catalog()
        return list(variants)

    def synthesize(
        self,
        text: str,
        voice: str = "en-us",
        rate_wpm: int = 175,
        pitch: int = 50,
        variant: str | None = None,
    ) -> tuple[np.ndarray, int]:
        """Speaks `text` and returns the samples.

        Args:
          text: UTF-8 text to speak (plain text; no SSML).
          voice: a voice's language code ("en-us", "en-gb-scotland"; a code
            shared by several voices picks eSpeak's preferred one) or its
            identifier ("gmw/en-US"); may carry a variant as "en-us+f3".
          rate_wpm: speaking rate in words per minute, 80 to 450.
          pitch: base pitch, 0 to 100 (50 is the voice's normal pitch).
          variant: optional variant name from `list_variants()`, e.g. "m3".

        Returns:
          `(waveform, sample_rate)`: float32 mono samples in [-1, 1] (int16
          PCM scaled by 1/32767, as `audio_io.from_int16_pcm`) and the rate in
          Hz. Resample with `audio_io.resample(waveform, sample_rate, 16000)`.

        Raises:
          ValueError: empty text, or rate/pitch out of range.
          UnknownVoiceError: the voice or variant does not exist; the message
            lists the available ones.
          EspeakError: the synthesis itself failed.

        Example:
          >>> synthesizer = EspeakSynthesizer()  # doctest: +SKIP
          >>> waveform, rate = synthesizer.synthesize("hi", "en-gb", variant="f2")  # doctest: +SKIP
        """
        waveform, sample_rate, _ = self.synthesize_words(text, voice, rate_wpm, pitch, variant)
        return waveform, sample_rate

    def synthesize_words(
        self,
        text: str,
        voice: str = "en-us",
        rate_wpm: int = 175,
        pitch: int = 50,
        variant: str | None = None,
    ) -> tuple[np.ndarray, int, list[WordEvent]]:
        """Speaks `text` like `synthesize`, and says where each word starts.

        Args:
          text, voice, rate_wpm, pitch, variant: as for `synthesize`.

        Returns:
          `(waveform, sample_rate, words)`: the samples and rate `synthesize`
          returns, and one `WordEvent` per word eSpeak NG spoke, in order. A
          word is what eSpeak NG's reader takes for one: usually a
          space-separated word of `text`, but it merges the words of its
          multi-word dictionary entries ("in the", "there are") and may split
          numbers or abbreviations; compare `text_start` and `text_length`
          with the text's words to check.

        Raises:
          As `synthesize`.

        Example:
          >>> synthesizer = EspeakSynthesizer()  # doctest: +SKIP
          >>> _, rate, words = synthesizer.synthesize_words("ben will pull")  # doctest: +SKIP
          >>> [(word.text_start, word.text_length) for word in words]  # doctest: +SKIP
          [(0, 3), (4, 4), (9, 4)]
        """
        if not text or not text.strip():
            raise ValueError("Text to synthesize is empty.")
        if "\0" in text:
            raise ValueError("Text to synthesize contains a NUL character.")
        if not RATE_MIN_WPM <= int(rate_wpm) <= RATE_MAX_WPM:
            raise ValueError(
                f"rate_wpm must be between {RATE_MIN_WPM} and {RATE_MAX_WPM}, got {rate_wpm}."
            )
        if not 0 <= int(pitch) <= 100:
            raise ValueError(f"pitch must be between 0 and 100, got {pitch}.")
        voice_name = self._resolve_voice(voice, variant)
        request = {
            "op": "synthesize",
            "text": text,
            "voice": voice_name,
            "rate": int(rate_wpm),
            "pitch": int(pitch),
        }
        with self._lock:
            header, payload = self._ensure_worker().request(request)
        pcm = np.frombuffer(payload, dtype=np.int16)
        if pcm.size == 0:
            raise EspeakError(f"eSpeak NG produced no audio for {text!r}.")
        # Same scaling as audio_io.from_int16_pcm (not imported: it pulls in
        # scipy and soundfile, which the helper process does not need).
        waveform = np.clip(pcm.astype(np.float32) / np.float32(32767.0), -1.0, 1.0)
        phonemes: dict[int, list[tuple[str, int]]] = {}
        for text_start, sample, name in header["phonemes"]:
            phonemes.setdefault(int(text_start), []).append((str(name), int(sample)))
        words = [
            WordEvent(start, length, sample, tuple(phonemes.get(start, ())))
            for start, length, sample in header["words"]
        ]
        return waveform, self._sample_rate, words

    def close(self) -> None:
        """Stops the helper process; the synthesizer restarts it if used again."""
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def __enter__(self) -> EspeakSynthesizer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals

    def _ensure_worker(self) -> _Worker:
        """The live helper for this process (call with the lock held)."""
        worker = self._worker
        if worker is not None and worker.owner_pid != os.getpid():
            # We are a fork of the process that started it: its pipes belong
            # to the parent, so leave it alone and start our own.
            worker = None
        if worker is None or not worker.alive():
            if worker is not None:
                worker.close()
            worker = _Worker(self._library_path, self._data_path)
            self._worker = worker
        return worker

    def _voice_catalog(self) -> tuple[list[Voice], list[str]]:
        with self._lock:
            if self._catalog is None:
                _, payload = self._ensure_worker().request({"op": "voices"})
                raw = json.loads(payload)
                voices = []
                for entry in raw["voices"]:
                    codes = tuple(code for _, code in entry["languages"])
                    voice = Voice(
                        language=codes[0] if codes else "",
                        name=entry["name"],
                        identifier=entry["identifier"],
                        gender=_GENDERS.get(entry["gender"], "unspecified"),
                        languages=codes,
                    )
                    voices.append(voice)
                    for priority, code in entry["languages"]:
                        self._priorities[(voice.identifier, code)] = priority
                voices.sort(key=lambda voice: (voice.language, voice.identifier))
                self._catalog = (voices, sorted(raw["variants"], key=str.lower))
            return self._catalog

    def _resolve_voice(self, voice: str, variant: str | None) -> str:
        """`voice[+variant]` -> "identifier[+variant]" for espeak_SetVoiceByName.

        SetVoiceByName matches file names, not language codes ("en-gb" fails
        while its file is "gmw/en"), so codes are resolved here, preferring
        the voice eSpeak ranks first for that code.
        """
        if "+" in voice:
            if variant is not None:
                raise ValueError(
                    f"Give the variant either in voice ({voice!r}) or as "
                    f"variant ({variant!r}), not both."
                )
            voice, variant = voice.split("+", 1)
        voices, variants = self._voice_catalog()
        wanted = voice.strip().lower()
        by_identifier = [v for v in voices if v.identifier.lower() == wanted]
        by_language = [v for v in voices if wanted in v.languages]
        matches = by_identifier or sorted(
            by_language, key=lambda v: self._priorities[(v.identifier, wanted)]
        )
        if not matches:
            prefix = wanted.split("-")[0]
            nearby = [v.language for v in voices if v.language.startswith(prefix)]
            if nearby:
                choices = f"available voices for {prefix!r}: {', '.join(nearby)}"
            else:
                codes = sorted({v.language for v in voices})
                choices = f"available voices: {', '.join(codes)}"
            raise UnknownVoiceError(f"eSpeak NG has no voice {voice!r}; {choices}.")
        resolved = matches[0].identifier
        if variant is None:
            return resolved
        known = {name.lower(): name for name in variants}
        if variant.lower() not in known:
            raise UnknownVoiceError(
                f"eSpeak NG has no voice variant {variant!r}; available variants: "
                f"{', '.join(variants)}."
            )
        return f"{resolved}+{known[variant.lower()]}"


# ------------------------------------------------------- the helper, caller side


# Runs espeak_helper.py in the helper. Dropping sys.path[0] (the working directory)
# first means no local file can shadow a standard module in the helper.
_WORKER_BOOTSTRAP = (
    "import sys; del sys.path[0]; import runpy; "
    "runpy.run_path(sys.argv[1], run_name='__espeak_worker__')"
)


class _Worker:
    """Parent-side handle on one helper process (see the module docstring).

    It speaks the pipe protocol that `espeak_helper`'s docstring describes.
    """

    def __init__(self, library_path: str, data_path: str) -> None:
        if not sys.executable:
            raise EspeakError("Cannot start the eSpeak NG helper: no Python executable.")
        self.owner_pid = os.getpid()
        self._spent = False
        # eSpeak prints warnings on stderr; keep them for error messages
        # without risking a full pipe.
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WORKER_BOOTSTRAP,
                os.path.abspath(espeak_helper.__file__),
                library_path,
                data_path,
            ],  # fmt: skip
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            close_fds=True,
        )
        self._finalizer = weakref.finalize(self, _stop_process, self._process, self._stderr)
        header = self._read_header()
        self.sample_rate = int(header["sample_rate"])

    def alive(self) -> bool:
        return not self._spent and self._process.poll() is None

    def request(self, message: dict) -> tuple[dict, bytes]:
        """Sends `message`; returns the answer's header and payload."""
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
            header = self._read_header()
            size = int(header["size"])
            payload = self._process.stdout.read(size)
        except (BrokenPipeError, OSError) as error:
            self.close()
            raise EspeakError(
                f"The eSpeak NG helper process has exited{self._stderr_tail()}."
            ) from error
        except EspeakError:
            raise  # a clean error answer: the protocol is still in step
        except BaseException:
            # Interrupted mid-answer (e.g. KeyboardInterrupt): the rest of the
            # answer would be read as the next one, so drop this helper.
            self.close()
            raise
        if len(payload) != size:
            raise EspeakError(
                f"The eSpeak NG helper process stopped mid-answer{self._stderr_tail()}."
            )
        # Without fork() the helper serves one request and exits.
        self._spent = not hasattr(os, "fork")
        return header, payload

    def close(self) -> None:
        self._finalizer()

    def _read_header(self) -> dict:
        line = self._process.stdout.readline()
        if not line:
            raise EspeakError(
                f"The eSpeak NG helper process exited unexpectedly{self._stderr_tail()}."
            )
        header = json.loads(line)
        if not header.get("ok"):
            raise EspeakError(header.get("error", "eSpeak NG failed."))
        return header

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        tail = self._stderr.read()[-500:].decode(errors="replace").strip()
        return f" (its stderr: {tail})" if tail else ""


def _stop_process(process: subprocess.Popen, stderr_file) -> None:
    """Closes the helper's stdin (it exits on EOF); kills it if it lingers."""
    try:
        if process.stdin:
            process.stdin.close()
        process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    finally:
        if process.stdout:
            process.stdout.close()
        stderr_file.close()
