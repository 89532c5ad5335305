"""Fixtures shared across test directories."""

import http.server
import os
import pathlib
import socket
import threading

import pytest
import tensorflow as tf
from keras import ops

# Before any test file imports it: failed asserts in the shared helpers then
# show their values, as the tests' own do.
pytest.register_assert_rewrite("tests.helpers")


class FileServer:
    """A loopback HTTP server for `files`, with Range support and fault injection.

    Args:
        files: URL path -> content.
        cut_first: paths whose first response sends half the body, then closes.
        honor_range: False makes the server ignore Range (always 200, full body).
    """

    def __init__(self, files: dict[str, bytes], cut_first=(), honor_range=True):
        self.files, self.cut = files, set(cut_first)
        self.honor_range = honor_range
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                requested = self.headers.get("Range")
                server.requests.append((self.path, requested))
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                if requested and server.honor_range:
                    start = int(requested.split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in server.cut:  # the connection drops mid-body
                    server.cut.discard(self.path)
                    body = body[: len(body) // 2]
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def unreachable_url():
    """An http URL on 127.0.0.1 that nobody listens on: where a test points the
    downloads it does not serve, so none of them can reach the internet."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def file_server():
    """`FileServer`, for tests that download from 127.0.0.1 (never the internet)."""
    return FileServer


def _find_testdata(folder_name: str, inside: str, env: str) -> pathlib.Path | None:
    """`$<env>`, else `shared/testdata/<folder_name>` beside the clone or beside
    any folder above it (clones live at different depths: the workplace's
    checkout, CI's clean clone, a clone made to try CI by hand); the folder
    must hold `inside`."""
    if os.environ.get(env):
        candidates = [pathlib.Path(os.environ[env])]
    else:
        above = pathlib.Path(__file__).resolve().parents
        candidates = [folder / "shared" / "testdata" / folder_name for folder in above]
    return next((c for c in candidates if (c / inside).is_dir()), None)


@pytest.fixture(scope="session")
def librispeech_mini() -> pathlib.Path:
    """The four real LibriSpeech utterances, in LibriSpeech's own layout
    (`<root>/LibriSpeech/<subset>/<speaker>/<chapter>/`, see its SOURCES.txt)."""
    root = _find_testdata("librispeech_mini", "LibriSpeech", "T2T_LITE_TESTDATA")
    if root is None:
        pytest.skip(
            "real LibriSpeech test audio not found: set T2T_LITE_TESTDATA to a "
            "librispeech_mini folder, or clone beside shared/testdata/"
        )
    return root


@pytest.fixture(scope="session")
def speechocean762_mini() -> pathlib.Path:
    """30 real speechocean762 recordings (6 speakers, children and adults) in the
    corpus's own layout: `<root>/speechocean762/{train,test,WAVE}` (see its SOURCES.txt)."""
    root = _find_testdata(
        "speechocean762_mini", "speechocean762/train", "T2T_LITE_SPEECHOCEAN762_TESTDATA"
    )
    if root is None:
        pytest.skip(
            "real speechocean762 test audio not found: set T2T_LITE_SPEECHOCEAN762_TESTDATA "
            "to a speechocean762_mini folder, or clone beside shared/testdata/"
        )
    return root


@pytest.fixture(scope="session")
def mini_librispeech_mini() -> pathlib.Path:
    """18 real Mini LibriSpeech recordings (train-clean-5: two readers each of
    `mini_librispeech`'s test, dev and train splits) in LibriSpeech's layout:
    `<root>/LibriSpeech/{SPEAKERS.TXT,train-clean-5/...}` (see its SOURCES.txt)."""
    root = _find_testdata(
        "mini_librispeech_mini", "LibriSpeech/train-clean-5", "T2T_LITE_MINI_LIBRISPEECH_TESTDATA"
    )
    if root is None:
        pytest.skip(
            "real Mini LibriSpeech test audio not found: set T2T_LITE_MINI_LIBRISPEECH_TESTDATA "
            "to a mini_librispeech_mini folder, or clone beside shared/testdata/"
        )
    return root


@pytest.fixture(scope="session")
def librispeech_flac(librispeech_mini) -> pathlib.Path:
    """One real utterance of `librispeech_mini`: test-clean 1089-134691-0000 (2.09 s)."""
    return librispeech_mini / "LibriSpeech/test-clean/1089/134691/1089-134691-0000.flac"


def greedy_decode(
    model, features: dict, decode_length: int, use_cache: bool = True, batch_size=None
):
    """Greedy decoding until every sequence emits EOS or `decode_length` tokens:
    the simplest search over `model`'s decode cache, the reference that the
    cached path (`use_cache=True`) and beam search with one beam must equal.

    Args:
        model: a `Transformer`.
        features: the inputs (ignored for a decoder-only model).
        decode_length: static maximum number of output tokens.
        use_cache: True for cached incremental decoding; False recomputes
            the decoder over the whole prefix at every step (reference).
        batch_size: needed only for a decoder-only model.

    Returns:
        int32 `[batch, decode_length]`: tokens up to and including EOS,
        then 0 (padding).
    """
    if use_cache:
        state = model.initial_decode_cache(features, decode_length, batch_size)
        batch_size = ops.shape(state["layer_0"]["self_attention"][0])[0]
    else:
        memory, memory_mask = (None, None)
        if model.has_inputs:
            memory, memory_mask = model.encode(features, training=False)
            batch_size = ops.shape(memory)[0]
        state = {}

    def body(step, previous, ids, finished, state):
        if use_cache:
            logits, state = model.decode_step(previous, step, state)
        else:
            logits = model.decode(ids, memory, memory_mask, training=False)[:, step]
        next_ids = ops.cast(ops.argmax(logits, axis=-1), "int32")
        next_ids = ops.where(finished, 0, next_ids)  # padding
        column = ops.cast(ops.arange(decode_length) == step, "int32")[None, :]
        ids = ids + column * next_ids[:, None]
        finished = ops.logical_or(finished, next_ids == 1)  # EOS
        return step + 1, next_ids, ids, finished, state

    def cond(step, previous, ids, finished, state):
        return ops.logical_and(step < decode_length, ops.logical_not(ops.all(finished)))

    loop_vars = (
        tf.constant(0, tf.int32),
        tf.zeros([batch_size], tf.int32),
        tf.zeros([batch_size, decode_length], tf.int32),
        tf.zeros([batch_size], tf.bool),
        state,
    )
    _, _, ids, _, _ = tf.while_loop(cond, body, loop_vars)
    return ids


@pytest.fixture(name="greedy_decode")
def greedy_decode_fixture():
    """`greedy_decode(model, features, decode_length, use_cache=True, batch_size=None)`."""
    return greedy_decode


# The export and streaming tests' tiny trained runs (`tests/serving/runs.py`),
# made once per test process: no test changes them.
@pytest.fixture(scope="session")
def speech_run(tmp_path_factory):
    from tests.serving.runs import train_speech_run

    return train_speech_run(tmp_path_factory.mktemp("speech_run"))


@pytest.fixture(scope="session")
def no_lm_run(tmp_path_factory):
    """A language model that saw "no" three times as often as "hi" (fused with `speech_run`)."""
    from tests.serving.runs import train_lm_run

    return train_lm_run(tmp_path_factory.mktemp("no_lm_run"), ["no", "no", "no", "hi"])


@pytest.fixture(scope="session")
def no_ngram_dir(tmp_path_factory) -> str:
    """A word n-gram of the same four sentences as `no_lm_run`'s, by t2t-lite-ngram."""
    from tests.serving.runs import count_ngram_dir

    return count_ngram_dir(tmp_path_factory.mktemp("no_ngram"), ["no", "no", "no", "hi"])


@pytest.fixture(scope="session")
def text_run(tmp_path_factory):
    from tests.serving.runs import train_text_run

    return train_text_run(tmp_path_factory.mktemp("text_run"))
