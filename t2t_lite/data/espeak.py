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
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref

import numpy as np

# speak_lib.h constants.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_ESPEAK_INITIALIZE_DONT_EXIT = 0x8000  # return -1 on missing data, not exit()
_POS_CHARACTER = 1
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_RATE = 1
_ESPEAK_PITCH = 3
_EE_OK = 0
RATE_MIN_WPM, RATE_MAX_WPM = 80, 450  # espeakRATE_MINIMUM / _MAXIMUM
_GENDERS = {0: "unspecified", 1: "male", 2: "female"}
_INSTALL_HINT = "pip install espeakng-loader (or pip install 't2t-lite[audio]')"


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


def _find_espeak() -> tuple[str, str]:
    """Paths of libespeak-ng and its data directory from espeakng-loader."""
    try:
        import espeakng_loader
    except ImportError as error:
        raise EspeakError(
            f"eSpeak NG is not installed; install it with: {_INSTALL_HINT}."
        ) from error
    library_path = espeakng_loader.get_library_path()
    try:
        data_path = espeakng_loader.get_data_path()
    except RuntimeError as error:
        raise EspeakError(
            f"eSpeak NG's voice data is missing ({error}); reinstall it with: {_INSTALL_HINT}."
        ) from error
    if not os.path.isfile(library_path):
        raise EspeakError(
            f"The eSpeak NG library {library_path!r} is missing; reinstall it "
            f"with: {_INSTALL_HINT}."
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
            payload = self._ensure_worker().request(request)
        pcm = np.frombuffer(payload, dtype=np.int16)
        if pcm.size == 0:
            raise EspeakError(f"eSpeak NG produced no audio for {text!r}.")
        # Same scaling as audio_io.from_int16_pcm (not imported: it pulls in
        # scipy and soundfile, which the helper process does not need).
        waveform = np.clip(pcm.astype(np.float32) / np.float32(32767.0), -1.0, 1.0)
        return waveform, self._sample_rate

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
                raw = json.loads(self._ensure_worker().request({"op": "voices"}))
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


# ---------------------------------------------------------------- the helper


# Runs this file in the helper. Dropping sys.path[0] (the working directory)
# first means no local file can shadow a standard module in the helper.
_WORKER_BOOTSTRAP = (
    "import sys; del sys.path[0]; import runpy; "
    "runpy.run_path(sys.argv[1], run_name='__espeak_worker__')"
)


class _Worker:
    """Parent-side handle on one helper process (see the module docstring).

    Protocol: one JSON request line in; a JSON header line
    `{"ok": true, "size": n}` followed by n payload bytes out, or
    `{"ok": false, "error": "..."}`.
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
                os.path.abspath(__file__),
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

    def request(self, message: dict) -> bytes:
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
        return payload

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


# ----------------------------------------------- code run in the helper process


class _CVoice(ctypes.Structure):
    """speak_lib.h's espeak_VOICE."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        # Not c_char_p: a list of (priority byte, NUL-terminated code) pairs.
        ("languages", ctypes.c_void_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


def _load_library(library_path: str) -> ctypes.CDLL:
    library = ctypes.CDLL(library_path)
    library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    library.espeak_Initialize.restype = ctypes.c_int
    library.espeak_SetSynthCallback.argtypes = [_SYNTH_CALLBACK]
    library.espeak_SetSynthCallback.restype = None
    library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    library.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    library.espeak_Synth.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
        ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
    ]  # fmt: skip
    library.espeak_Synchronize.restype = ctypes.c_int
    library.espeak_ListVoices.argtypes = [ctypes.POINTER(_CVoice)]
    library.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_CVoice))
    return library


def _language_codes(address: int) -> list[tuple[int, str]]:
    """Decodes espeak_VOICE.languages into (priority, code) pairs."""
    pairs, offset = [], 0
    while (priority := ctypes.c_ubyte.from_address(address + offset).value) != 0:
        code = ctypes.string_at(address + offset + 1)
        pairs.append((priority, code.decode("utf-8").lower()))
        offset += len(code) + 2
    return pairs


def _list_voices(library: ctypes.CDLL, spec: _CVoice | None) -> list[dict]:
    array = library.espeak_ListVoices(ctypes.byref(spec) if spec else None)
    entries, index = [], 0
    while array[index]:
        voice = array[index].contents
        entries.append(
            {
                "name": voice.name.decode("utf-8"),
                "identifier": voice.identifier.decode("utf-8"),
                "gender": voice.gender,
                "languages": _language_codes(voice.languages),
            }
        )
        index += 1
    return entries


def _serve_voices(library: ctypes.CDLL) -> bytes:
    # Listing the pseudo-language "variant" lists the variants (espeak-ng's
    # `--voices=variant` does the same).
    variant_language = ctypes.create_string_buffer(b"variant")
    variant_spec = _CVoice()
    variant_spec.languages = ctypes.cast(variant_language, ctypes.c_void_p)
    variants = [
        entry["identifier"].rsplit("/", 1)[-1] for entry in _list_voices(library, variant_spec)
    ]
    return json.dumps({"voices": _list_voices(library, None), "variants": variants}).encode()


def _reset_random_state(library: ctypes.CDLL) -> None:
    """Seeds both generators eSpeak NG draws noise from.

    Breathy variants (f2, f3, f5, whisper, ...) take aspiration noise from
    libc's rand(), whose state at fork time varies from one helper process to
    the next; newer releases also have their own generator. Seeding both in
    the fork makes the samples identical across processes and machines.
    """
    try:
        ctypes.CDLL(None).srand(1)
    except (OSError, AttributeError):  # no process-wide libc handle (Windows)
        pass
    if hasattr(library, "espeak_ng_SetRandSeed"):
        library.espeak_ng_SetRandSeed(ctypes.c_long(1))


def _serve_synthesis(library: ctypes.CDLL, request: dict, chunks: list) -> bytes:
    status = library.espeak_SetVoiceByName(request["voice"].encode("utf-8"))
    if status != _EE_OK:
        raise RuntimeError(f"espeak_SetVoiceByName({request['voice']!r}) returned {status}")
    _reset_random_state(library)
    library.espeak_SetParameter(_ESPEAK_RATE, request["rate"], 0)
    library.espeak_SetParameter(_ESPEAK_PITCH, request["pitch"], 0)
    text = request["text"].encode("utf-8") + b"\0"
    status = library.espeak_Synth(
        text, len(text), 0, _POS_CHARACTER, 0, _ESPEAK_CHARS_UTF8, None, None
    )
    if status != _EE_OK:
        raise RuntimeError(f"espeak_Synth returned {status}")
    library.espeak_Synchronize()
    return b"".join(chunks)


def _write_all(file_descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(file_descriptor, view) :]


def _answer(file_descriptor: int, payload: bytes) -> None:
    header = json.dumps({"ok": True, "size": len(payload)}).encode() + b"\n"
    _write_all(file_descriptor, header + payload)


def _fail(file_descriptor: int, message: str) -> None:
    _write_all(file_descriptor, json.dumps({"ok": False, "error": message}).encode() + b"\n")


def _worker_main(library_path: str, data_path: str) -> None:
    """Initializes eSpeak NG once, then forks a fresh copy per request."""
    # Answers go to a private copy of stdout; fd 1 becomes stderr, so nothing
    # the C library prints can corrupt the protocol.
    out = os.dup(1)
    os.dup2(2, 1)
    try:
        library = _load_library(library_path)
    except OSError as error:
        _fail(out, f"Cannot load eSpeak NG from {library_path!r} ({error}); "
                   f"reinstall it with: {_INSTALL_HINT}.")  # fmt: skip
        return
    sample_rate = library.espeak_Initialize(
        _AUDIO_OUTPUT_SYNCHRONOUS,
        0,
        data_path.encode("utf-8"),
        _ESPEAK_INITIALIZE_DONT_EXIT,
    )
    if sample_rate <= 0:
        _fail(out, f"eSpeak NG failed to initialize with data {data_path!r}; "
                   f"reinstall it with: {_INSTALL_HINT}.")  # fmt: skip
        return
    chunks: list[bytes] = []

    def collect(samples, num_samples, _events):
        if samples and num_samples > 0:
            chunks.append(ctypes.string_at(samples, 2 * num_samples))
        return 0  # continue synthesis

    callback = _SYNTH_CALLBACK(collect)  # must outlive every synthesis
    library.espeak_SetSynthCallback(callback)
    _write_all(out, json.dumps({"ok": True, "sample_rate": sample_rate}).encode() + b"\n")

    can_fork = hasattr(os, "fork")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        child = os.fork() if can_fork else 0
        if child:
            _, status = os.waitpid(child, 0)
            if status != 0:
                _fail(out, f"eSpeak NG crashed on {request!r} (wait status {status}).")
            continue
        # In the fork (or, without fork, in a helper that then exits).
        try:
            if request["op"] == "voices":
                payload = _serve_voices(library)
            else:
                payload = _serve_synthesis(library, request, chunks)
            _answer(out, payload)
        except Exception as error:  # reported to the parent, never raised here
            _fail(out, f"eSpeak NG failed on {request!r}: {error}.")
        finally:
            if can_fork:
                os._exit(0)  # never return into the loop: the parent reads stdin
        return


if __name__ == "__espeak_worker__":
    _worker_main(sys.argv[2], sys.argv[3])
