"""Tiny trained runs for the export tests, made the way the trainer makes them
(hparams.json, flags.json, a checkpoint of model + optimizer + step) after a
few dozen training steps on a fixed batch: a speech model on a synthesized
tone and noise burst, and a text model on algorithmic_reverse_binary40.
`conftest.py` makes each once per test process."""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import registry, run_dir
from t2t_lite.data import feature_config, shards
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.normalization_prior import feature_statistics
from t2t_lite.data.speech_features import featurize
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.hparam import create_hparams
from t2t_lite.models.checkpointable import model_weights
from tests.helpers import (
    BEAM_DECODE,
    CTC_BEAM_DECODE,
    NO_DROPOUT,
    TINY_CTC_SPEECH,
    TINY_TRANSFORMER,
    fit_one_batch,
    run_command,
)

# Inputs of 300 frames (3 s of audio) at most; the quick start's statistics
# (over the frames within 20 dB of the utterance's loud ones), so every
# export featurizes with them.
SPEECH_HPARAMS = (
    f"{TINY_CTC_SPEECH},{NO_DROPOUT},max_input_seq_length=300,audio_statistics_floor_db=20"
)
# The streaming quick start's featurization: causal, from a training-set prior.
STREAMING_HPARAMS = (
    f"{TINY_CTC_SPEECH},{NO_DROPOUT},ffn_layer=conv_relu_conv,use_dynamic_chunk=True,"
    "audio_causal_normalization=True,audio_normalization_prior_frames=100,"
    "max_input_seq_length=300"
)
# A streaming export's settings in the tests: 80 ms chunks, a left context of 2 chunks.
STREAM_EXPORT_DECODE = f"{CTC_BEAM_DECODE},chunk_frames=2,left_chunks=2"
TEXT_HPARAMS = f"{TINY_TRANSFORMER},{NO_DROPOUT},max_input_seq_length=12,max_target_seq_length=24"
SAMPLE_RATE = 16000


@dataclasses.dataclass
class Run:
    output_dir: str
    problem: object
    hparams: object
    model: object
    encoders: dict
    export_path: str = ""

    @property
    def run_config(self) -> RunConfig:
        return RunConfig.from_hparams(self.hparams)


def export_version(run: Run, export_dir: str, version: int, decode_extra: str = "") -> Run:
    """A copy of `run` with `export_path`: the run exported as `version`
    (decoded as `run_decode_hparams` says, then `decode_extra`)."""
    from t2t_lite.serving import export

    trained = TrainedRun.of(run.output_dir, run.problem)
    decode_config = DecodeConfig.parse(
        decode_extra, base=DecodeConfig.parse(run_decode_hparams(run))
    )
    path = export.export_run(trained, export_dir, decode_config, version=version)
    return dataclasses.replace(run, export_path=path)


def tone_and_noise() -> dict[str, np.ndarray]:
    time = np.arange(SAMPLE_RATE, dtype=np.float32) / SAMPLE_RATE
    tone = 0.5 * np.sin(2 * np.pi * 440.0 * time)
    noise = np.random.default_rng(0).uniform(-0.3, 0.3, int(0.8 * SAMPLE_RATE))
    return {"hi": tone.astype(np.float32), "no": noise.astype(np.float32)}


def quiet_room(seconds: float, seed: int = 1) -> np.ndarray:
    """`seconds` of a microphone's noise floor: uniform noise at about -60 dBFS
    (digital silence would be trimmed as no audio at all)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1e-3, 1e-3, int(seconds * SAMPLE_RATE)).astype(np.float32)


def pad_rows(rows: list[np.ndarray], dtype) -> np.ndarray:
    """Zero-pads 1-D (or [length, ...]) arrays into one batch."""
    width = max(len(row) for row in rows)
    batch = np.zeros((len(rows), width) + rows[0].shape[1:], dtype)
    for i, row in enumerate(rows):
        batch[i, : len(row)] = row
    return batch


def speech_features(waveforms: list[np.ndarray], hparams) -> dict:
    """The input pipeline's features: per-utterance featurize, then padding."""
    config = FeatureConfig.from_hparams(hparams)
    rows = [featurize(w, config, training=False).numpy() for w in waveforms]
    return {
        "inputs": pad_rows(rows, np.float32),
        "inputs_length": np.array([len(r) for r in rows], np.int32),
    }


def text_features(texts: list[str], encoder) -> dict:
    return {"inputs": pad_rows([np.array(encoder.encode(t) + [1]) for t in texts], np.int32)}


def make_run(
    directory, problem, hparams, features: dict, steps: int, data_dir=None, seed: int = 1
) -> Run:
    """Trains `steps` steps on one batch from weights drawn at `seed` and saves
    a run like the trainer's (`data_dir`: where the problem's vocabulary is,
    if it has one to read)."""
    keras.utils.set_random_seed(seed)
    problem_name = problem.name
    output_dir = str(directory)
    run_dir.save_or_check_hparams(output_dir, hparams)
    run_dir.save_flags(
        output_dir,
        {
            "problem": problem_name,
            "model": "transformer",
            "data_dir": data_dir,
            "t2t_usr_dir": None,
        },
    )
    model = registry.model("transformer").from_hparams(hparams, **problem.model_kwargs(data_dir))
    model(features)
    optimizer = keras.optimizers.Adam(1e-2)
    fit_one_batch(model, features, steps, optimizer)
    checkpoint = tf.train.Checkpoint(
        model=model_weights(model), optimizer=optimizer, step=optimizer.iterations
    )
    tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=2).save(checkpoint_number=steps)
    return Run(output_dir, problem, hparams, model, problem.feature_encoders(data_dir))


def run_decode_hparams(run: Run) -> str:
    # Speech decodes jointly with its CTC head.
    return CTC_BEAM_DECODE if run.problem.input_modality == "speech" else BEAM_DECODE


def reference_decode(
    run: Run, features: dict, decode_hparams: str | None = None
) -> tuple[list[str], np.ndarray]:
    """In-process decoding with the same decode hparams (or these): texts and scores."""
    config = DecodeConfig.parse(decode_hparams or run_decode_hparams(run))
    surfaces = run.encoders["targets"].token_surfaces()
    decoder = BatchDecoder(run.model, run.run_config, config, target_surfaces=surfaces)
    ids, scores = decoder({k: tf.constant(v) for k, v in features.items()})
    return [run.encoders["targets"].decode(row[0]) for row in ids], scores[:, 0]


def floored_clips(silence: float) -> list[tuple[str, np.ndarray]]:
    """The tone ("hi") and the noise burst ("no"), each with `silence`
    seconds of a quiet room (noise at -60 dBFS) either side."""
    quiet = quiet_room(silence)
    return [(text, np.concatenate([quiet, clip, quiet])) for text, clip in tone_and_noise().items()]


def tones_over_floors() -> list[tuple[str, np.ndarray]]:
    """The tone ("hi"), whole or its start, in quiet rooms of several lengths
    and levels (-60 and -50 dBFS), and the rooms alone (""): a tiny model
    trained on these says "hi" for a tone wherever it falls in a floor and
    nothing for the floor, whatever its seed (the noise burst of `floored_clips` is white
    noise as a floor is, so a model of those hears "no" in a floor alone)."""
    tone = tone_and_noise()["hi"]
    clips = []
    for seed, (before, seconds, after, level_db) in enumerate(
        [(0.3, 1.0, 0.5, -60), (0.8, 1.0, 0.2, -60), (0.5, 1.0, 1.0, -60), (0.3, 1.0, 0.0, -60),
         (0.6, 0.5, 0.0, -60), (0.1, 1.0, 0.8, -50), (0.9, 1.0, 0.6, -50), (0.4, 0.6, 0.05, -50)]
    ):  # fmt: skip
        gain = 10 ** ((level_db + 60) / 20)  # `quiet_room` peaks at -60 dBFS
        room = [gain * quiet_room(s, seed=10 + 2 * seed + i) for i, s in enumerate((before, after))]
        # What a stream's step reads: a tone, or its start, in a room.
        clips.append(("hi", np.concatenate([room[0], tone[: int(seconds * SAMPLE_RATE)], room[1]])))
    for seed, (seconds, level_db) in enumerate([(1.0, -60), (2.0, -50), (0.5, -50)]):
        clips.append(("", 10 ** ((level_db + 60) / 20) * quiet_room(seconds, seed=30 + seed)))
    return clips


def train_speech_run(
    directory,
    overrides: str = SPEECH_HPARAMS,
    steps: int = 80,
    silence: float = 0.0,
    clips: list[tuple[str, np.ndarray]] | None = None,
    problem_name: str = "librispeech",
    data_dir: str | None = None,
    seed: int = 1,
) -> Run:
    """A speech model trained to say "hi" for a tone and "no" for noise:
    on `clips` (text, waveform), by default `floored_clips(silence)` (a
    quiet room either side of each clip, so its CTC head learns silence as
    blank, as a real model's does).

    Hparams that want a normalization prior get the clips' statistics, as
    the trainer gives them its training data's. `problem_name` is a
    LibriSpeech problem; `data_dir` holds its vocabulary if it has one;
    `seed` draws the initial weights.
    """
    clips = floored_clips(silence) if clips is None else clips
    texts, waveforms = zip(*clips, strict=True)
    problem = registry.problem(problem_name)
    hparams = create_hparams("transformer_tiny", overrides, problem)
    config = FeatureConfig.from_hparams(hparams)
    if config.wants_prior:
        statistics = feature_statistics(waveforms, config)
        feature_config.store_prior(hparams, statistics.mean, statistics.mean_square)
    features = speech_features(list(waveforms), hparams)
    encoder = problem.feature_encoders(data_dir)["targets"]
    features["targets"] = pad_rows([np.array(encoder.encode(t) + [1]) for t in texts], np.int32)
    return make_run(directory, problem, hparams, features, steps, data_dir, seed)


def train_lm_run(directory, sentences: list[str], steps: int = 40) -> Run:
    """A language model of `sentences` in the speech runs' byte vocabulary,
    saved as `t2t-lite-trainer --problem=languagemodel_spoken_synth` saves one."""
    problem = registry.problem("languagemodel_spoken_synth")
    encoder = problem.feature_encoders(None)["targets"]
    features = {
        "targets": pad_rows([np.array(encoder.encode(t) + [1]) for t in sentences], np.int32)
    }
    hparams = create_hparams("transformer_tiny", f"{TINY_TRANSFORMER},{NO_DROPOUT}", problem)
    return make_run(directory, problem, hparams, features, steps)


def count_ngram_dir(directory, sentences: list[str], order: int = 2) -> str:
    """A word n-gram of `sentences` in the speech runs' byte vocabulary, counted
    by `t2t-lite-ngram` from a `languagemodel_spoken_synth` train split;
    returns its directory (an `lm_dir`)."""
    problem = registry.problem("languagemodel_spoken_synth")
    encoder = problem.feature_encoders(None)["targets"]
    data_dir, lm_dir = os.path.join(directory, "data"), os.path.join(directory, "ngram")
    examples = [{"targets": encoder.encode(t) + [1]} for t in sentences]
    shards.write_shards(examples, shards.shard_paths(data_dir, problem.name, "train", 1))
    result = run_command(
        "t2t-lite-ngram", f"--problem={problem.name}", f"--data_dir={data_dir}",
        f"--output_dir={lm_dir}", f"--ngram_order={order}", "--ngram_prune=1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return lm_dir


def train_text_run(directory) -> Run:
    """A text model trained to reverse six binary sentences."""
    problem = registry.problem("algorithmic_reverse_binary40")
    sentences = ["1 1 0", "0 1", "1 0 0 1", "0 0 1 0 1", "1 1 1 0", "0 1 1"]
    encoders = problem.feature_encoders(None)
    features = text_features(sentences, encoders["inputs"])
    reversed_ = [" ".join(reversed(s.split())) for s in sentences]
    features["targets"] = text_features(reversed_, encoders["targets"])["inputs"]
    hparams = create_hparams("transformer_tiny", TEXT_HPARAMS, problem)
    return make_run(directory, problem, hparams, features, steps=60)
