"""t2t-lite-serve started as a user starts it, for the server's tests: the
command on a free port of 127.0.0.1, waited for until /healthz says 200,
always stopped, its output checked for tracebacks and noise."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers import assert_quiet_output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(url: str, body: bytes | None = None, content_type: str | None = None):
    """(status, parsed JSON or text, headers) of one request."""
    message = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if content_type:
        message.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(message, timeout=300) as response:
            status, payload, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, payload, headers = error.code, error.read(), error.headers
    if headers.get_content_type() == "application/json":
        return status, json.loads(payload), headers
    return status, payload.decode(), headers


def metric(text: str, name: str) -> float:
    """A sample's value in a /metrics text (the first line starting with `name`)."""
    return float(next(line.split()[1] for line in text.splitlines() if line.startswith(name)))


@contextlib.contextmanager
def serving(export_dir: str, *flags: str):
    """Yields the URL of `t2t-lite-serve --export_dir=export_dir *flags`."""
    port = free_port()
    process = subprocess.Popen(
        ["t2t-lite-serve", f"--export_dir={export_dir}", f"--port={port}", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:  # the server never outlives the tests, whatever fails
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 300
        status = None
        while time.time() < deadline and process.poll() is None:
            try:
                status = request(f"{url}/healthz")[0]
            except OSError:
                status = None
            if status == 200:
                break
            time.sleep(0.5)
        if status != 200:
            pytest.fail("the server did not come up (its output follows the test's)")
        yield url
    finally:
        process.terminate()
        output = process.communicate(timeout=60)[0]
        print(output[-3000:])  # shown by pytest when a test or this fixture fails
    assert "Traceback" not in output, output[-3000:]
    assert_quiet_output(subprocess.CompletedProcess(process.args, 0, output, ""))
