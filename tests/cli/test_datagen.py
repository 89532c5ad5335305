"""t2t-lite-datagen: writes shards, keeps existing ones, reports, fails clearly."""

import os
import re
import socket
import time

from tests.helpers import run_command


def test_writes_then_keeps_shards(tmp_path):
    data_dir = tmp_path / "data"
    result = run_command(
        "t2t-lite-datagen",
        "--problem=algorithmic_identity_binary40",
        f"--data_dir={data_dir}",
        f"--tmp_dir={tmp_path / 'raw'}",
    )
    assert result.returncode == 0, result.stderr
    assert "train: 100000 examples written, 0 skipped" in result.stdout
    assert len(list(data_dir.glob("algorithmic_identity_binary40-train-*-of-00010"))) == 10
    assert not list(data_dir.glob("*.incomplete"))
    again = run_command(
        "t2t-lite-datagen", "--problem=algorithmic_identity_binary40", f"--data_dir={data_dir}"
    )
    assert again.returncode == 0
    assert "train: shards exist, kept (--overwrite to regenerate)" in again.stdout


def test_unknown_problem_and_missing_flag(tmp_path):
    result = run_command(
        "t2t-lite-datagen", "--problem=algorithmic_revers_binary40", f"--data_dir={tmp_path}"
    )
    assert result.returncode == 1
    assert "closest registered: algorithmic_reverse_binary40" in result.stderr
    result = run_command("t2t-lite-datagen", "--problem=algorithmic_identity_binary40")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("--data_dir is required.")


def test_translate_offline_fails_fast_in_one_line(tmp_path, user_stderr_lines):
    """The real wmt14 builder reaches tfds' download; every request goes to a
    proxy on a closed loopback port (nothing leaves the machine), so the
    download fails as offline, in one line naming the URL and --tmp_dir."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {**os.environ, "TFDS_DATA_DIR": str(tmp_path / "tfds"), "NO_PROXY": "", "no_proxy": ""}
    env.update({name: proxy for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")})
    start = time.monotonic()
    result = run_command(
        "t2t-lite-datagen",
        "--problem=translate_ende_wmt32k",
        f"--data_dir={tmp_path / 'data'}",
        f"--tmp_dir={tmp_path / 'raw'}",
        env=env,
    )
    assert time.monotonic() - start < 30  # tfds alone retries for 3.4 minutes a URL
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert re.match(r"t2t-lite-datagen: error: Downloading http://\S*statmt\.org/\S+ fail", last)
    assert f"download the file yourself into {tmp_path / 'raw'} (--tmp_dir" in last


def test_offline_without_books_fails_in_one_sentence_naming_where_to_put_them(
    tmp_path, mini_librispeech_mini, unreachable_url, user_stderr_lines
):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(mini_librispeech_mini / "LibriSpeech")
    result = run_command(
        "t2t-lite-datagen",
        "--problem=languagemodel_mini_librispeech_books",
        f"--data_dir={tmp_path / 'data'}",
        f"--tmp_dir={raw}",
        env={**os.environ, "T2T_LITE_LIBRISPEECH_LM_URL": unreachable_url},
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = user_stderr_lines(result.stderr)[-1]
    assert f"put Project Gutenberg plain-text books in {raw / 'books'}/" in last
    assert not list((tmp_path / "data").glob("*-train-*"))
