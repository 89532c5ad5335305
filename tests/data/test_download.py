"""Tests for t2t_lite.data.download: downloads from a loopback HTTP server."""

from __future__ import annotations

import os
import pathlib
import socket

import pytest

from t2t_lite.data.download import download
from t2t_lite.data.problem import DataError

CONTENT = os.urandom(300_000)


def test_download_complete_file(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}) as server:
        path = download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert pathlib.Path(path).read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", None)]
    assert sorted(os.listdir(tmp_path)) == ["f.tar.gz"]


def test_download_resumes_an_interrupted_transfer_with_range(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}, cut_first={"/f.tar.gz"}) as server:
        download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz", len(CONTENT))
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", None), ("/f.tar.gz", f"bytes={len(CONTENT) // 2}-")]
    assert not (tmp_path / "f.tar.gz.partial").exists()


def test_download_resumes_a_partial_file_from_an_earlier_run(tmp_path, file_server):
    (tmp_path / "f.tar.gz.partial").write_bytes(CONTENT[:1000])
    with file_server({"/f.tar.gz": CONTENT}) as server:
        download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", "bytes=1000-")]


def test_download_restarts_when_the_server_ignores_range(tmp_path, file_server):
    (tmp_path / "f.tar.gz.partial").write_bytes(b"stale bytes of another attempt")
    with file_server({"/f.tar.gz": CONTENT}, honor_range=False) as server:
        download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT


def test_download_http_error_names_the_url_and_what_to_do(tmp_path, file_server):
    with file_server({}) as server:
        url = f"{server.url}/missing.tar.gz"
        with pytest.raises(DataError, match=f"{url} failed with HTTP 404.*yourself"):
            download(url, tmp_path / "missing.tar.gz")
    assert os.listdir(tmp_path) == []


def test_download_size_mismatch_and_refused_connection(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}) as server:
        with pytest.raises(DataError, match="different file"):
            download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz", expected_size=5)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DataError, match=f"127.0.0.1:{port}/f.tar.gz failed"):
        download(f"http://127.0.0.1:{port}/f.tar.gz", tmp_path / "f.tar.gz")
    assert not (tmp_path / "f.tar.gz").exists()
