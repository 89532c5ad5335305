"""The code that runs inside the eSpeak NG helper process (see `espeak`).

`EspeakSynthesizer` starts `python -c <bootstrap> <this file> <library> <data>`,
which runs this file by path as `__espeak_worker__`: it loads libespeak-ng
with ctypes, initializes it once, then serves each request line read from
stdin in a fresh `fork()` of that pristine process (one fork per request,
so eSpeak's C state never carries over from one utterance to the next).
Being run by path, in an interpreter that may not find t2t_lite, this file
imports the standard library only.

Protocol, over the helper's stdin and stdout: one JSON request line in
(`{"op": "voices"}`, or `{"op": "synthesize"}` with `text`, `voice`, `rate`
and `pitch`); out, a JSON header line `{"ok": true, "size": n}` followed by
n payload bytes (int16 PCM, or the voices as JSON), or `{"ok": false,
"error": "..."}`. A synthesis' header also holds `"words"`: one
`[text start, text length, sample]` per word eSpeak NG spoke, in order (the
0-based character index and length of the word in `text`, and the index of
the sample where the word starts in the payload), and `"phonemes"`: one
`[text start, sample, name]` per phoneme (the text start of the word it
belongs to, where it starts, its eSpeak mnemonic such as "D" or "'A@").
The helper's first line, once eSpeak NG is initialized, is
`{"ok": true, "sample_rate": r}` (or an error).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

# speak_lib.h constants.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_ESPEAK_INITIALIZE_DONT_EXIT = 0x8000  # return -1 on missing data, not exit()
# Phoneme events cost nothing in the audio (its samples are the same); they
# tell where a word starts inside a multi-word dictionary entry ("in the").
_ESPEAK_INITIALIZE_PHONEME_EVENTS = 0x0001
_POS_CHARACTER = 1
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_RATE = 1
_ESPEAK_PITCH = 3
_EE_OK = 0
_EVENT_LIST_TERMINATED = 0  # espeak_EVENT_TYPE: the end of a callback's events
_EVENT_WORD = 1
_EVENT_PHONEME = 7

# How to get eSpeak NG; the caller's errors (`espeak`) quote it too.
INSTALL_HINT = "pip install espeakng-loader (or pip install 't2t-lite[audio]')"


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


class _CEvent(ctypes.Structure):
    """speak_lib.h's espeak_EVENT (the synth callback gets an array of them)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        # With POS_CHARACTER: 1-based character index of the word in the text.
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),  # WORD events: the word's length in characters
        ("audio_position", ctypes.c_int),  # milliseconds, rounded: `sample` is exact
        # The event's sample index in the whole synthesis' output; it can lie
        # ahead of the samples delivered so far (events come with their chunk).
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        # A union of int, const char* and char[8]: PHONEME events put the
        # phoneme's mnemonic here, NUL-padded.
        ("id", ctypes.c_char * 8),
    ]


_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_CEvent)
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
    """Speaks the request's text; returns the int16 PCM the callback put in `chunks`."""
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


def _answer(file_descriptor: int, payload: bytes, **fields) -> None:
    header = json.dumps({"ok": True, "size": len(payload), **fields}).encode() + b"\n"
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
                   f"reinstall it with: {INSTALL_HINT}.")  # fmt: skip
        return
    sample_rate = library.espeak_Initialize(
        _AUDIO_OUTPUT_SYNCHRONOUS,
        0,
        data_path.encode("utf-8"),
        _ESPEAK_INITIALIZE_DONT_EXIT | _ESPEAK_INITIALIZE_PHONEME_EVENTS,
    )
    if sample_rate <= 0:
        _fail(out, f"eSpeak NG failed to initialize with data {data_path!r}; "
                   f"reinstall it with: {INSTALL_HINT}.")  # fmt: skip
        return
    chunks: list[bytes] = []
    words: list[list[int]] = []  # [text start, text length, sample] per word
    phonemes: list[list] = []  # [text start, sample, name] per phoneme

    def collect(samples, num_samples, events):
        index = 0
        while events and events[index].type != _EVENT_LIST_TERMINATED:
            event = events[index]
            if event.type == _EVENT_WORD:
                words.append([event.text_position - 1, event.length, event.sample])
            elif event.type == _EVENT_PHONEME:
                name = event.id.decode("ascii", errors="replace")
                phonemes.append([event.text_position - 1, event.sample, name])
            index += 1
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
                _answer(out, _serve_voices(library))
            else:
                payload = _serve_synthesis(library, request, chunks)
                _answer(out, payload, words=words, phonemes=phonemes)
        except Exception as error:  # reported to the parent, never raised here
            _fail(out, f"eSpeak NG failed on {request!r}: {error}.")
        finally:
            if can_fork:
                os._exit(0)  # never return into the loop: the parent reads stdin
        return


if __name__ == "__espeak_worker__":
    _worker_main(sys.argv[2], sys.argv[3])
