"""Tests for t2t_lite.data.download: downloads from a loopback HTTP server."""

from __future__ import annotations

import os
import pathlib
import socket
import time

import pytest

from t2t_lite.data.download import download, tfds_download_and_prepare
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


def _tiny_pairs_builder(url: str, data_dir):
    """A tfds builder of (en, de) pairs read from one TSV file at `url`."""
    import tensorflow_datasets as tfds

    with tfds.core.registered.skip_registration():  # a class per test, no name clash

        class TinyPairs(tfds.core.GeneratorBasedBuilder):
            VERSION = tfds.core.Version("1.0.0")

            def _info(self):
                text = tfds.features.Text()
                features = tfds.features.FeaturesDict({"en": text, "de": text})
                return tfds.core.DatasetInfo(builder=self, features=features)

            def _split_generators(self, dl_manager):
                return {"train": self._generate_examples(dl_manager.download(url))}

            def _generate_examples(self, path):
                for index, line in enumerate(path.read_text().splitlines()):
                    english, german = line.split("\t")
                    yield index, {"en": english, "de": german}

    return TinyPairs(data_dir=str(data_dir))


def _closed_port_url(path: str) -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def test_tfds_download_and_prepare_of_a_real_builder_from_loopback(tmp_path, file_server):
    """A real tfds download and prepare (not mock_data): it reaches the modules
    tfds imports lazily (importlib_resources in 4.9.10), which setup.py installs."""
    import tensorflow_datasets as tfds

    pairs = b"hello\thallo\ngood day\tguten Tag\n"
    with file_server({"/pairs.tsv": pairs}) as server:
        builder = _tiny_pairs_builder(f"{server.url}/pairs.tsv", tmp_path / "tfds")
        tfds_download_and_prepare(builder, manual_dir=str(tmp_path / "raw"))
    assert [path for path, _ in server.requests] == ["/pairs.tsv", "/pairs.tsv"]  # check, get
    dataset = builder.as_dataset(split="train", shuffle_files=False)
    got = sorted((ex["en"].decode(), ex["de"].decode()) for ex in tfds.as_numpy(dataset))
    assert got == [("good day", "guten Tag"), ("hello", "hallo")]


def test_tfds_download_from_an_unreachable_server_fails_fast_in_one_line(tmp_path):
    url = _closed_port_url("/training-parallel-nc-v9.tgz")
    builder = _tiny_pairs_builder(url, tmp_path / "tfds")
    start = time.monotonic()
    with pytest.raises(DataError) as error:
        tfds_download_and_prepare(builder, manual_dir=str(tmp_path / "raw"))
    assert time.monotonic() - start < 30  # tfds alone retries for 3.4 minutes
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"Downloading {url} failed (")
    assert f"download the file yourself into {tmp_path / 'raw'} (--tmp_dir" in message
