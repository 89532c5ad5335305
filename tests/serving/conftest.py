"""The export tests' trained runs, made once per test process (`runs.py`) and
shared by the SavedModel and the TFLite tests: neither changes them."""

import pytest

from tests.serving.runs import Run, train_speech_run, train_text_run


@pytest.fixture(scope="session")
def speech_run(tmp_path_factory) -> Run:
    return train_speech_run(tmp_path_factory.mktemp("speech_run"))


@pytest.fixture(scope="session")
def text_run(tmp_path_factory) -> Run:
    return train_text_run(tmp_path_factory.mktemp("text_run"))
