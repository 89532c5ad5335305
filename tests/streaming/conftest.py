"""One tiny trained streaming model for the streaming tests, and its
SavedModel export (trained and exported once for the package)."""

import pytest

from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.serving import export
from tests.serving.runs import STREAM_EXPORT_DECODE, STREAMING_HPARAMS, train_speech_run


@pytest.fixture(scope="package")
def run(tmp_path_factory):
    return train_speech_run(tmp_path_factory.mktemp("stream"), STREAMING_HPARAMS, steps=200)


@pytest.fixture(scope="package")
def exported(run, tmp_path_factory):
    """The run exported with `STREAM_EXPORT_DECODE`'s chunk and left context."""
    trained = TrainedRun.of(run.output_dir, run.problem)
    export_dir = tmp_path_factory.mktemp("stream_export") / "export"
    return export.export_run(trained, str(export_dir), DecodeConfig.parse(STREAM_EXPORT_DECODE), 1)
