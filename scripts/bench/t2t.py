"""t2t-lite's contenders, and TF's matmul limit: `run()` times one repetition."""

import collections
import glob
import json
import tempfile
import time

import numpy as np
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import pipeline
from t2t_lite.data.problem import TRAIN
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.data.text_encoders import EOS_ID
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.beam_search import beam_search
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.train_step import StepSettings, make_replica_step, make_train_loop

from . import common


def make_model(sizes, modality: str, **overrides):
    """`transformer_base` at the benchmark's sizes, dropout included: (model, hparams)."""
    hparams = registry.hparams("transformer_base").override_from_dict(dict(
        hidden_size=sizes.hidden, filter_size=sizes.filter, num_heads=sizes.heads,
        num_encoder_layers=sizes.encoder_layers, num_decoder_layers=sizes.decoder_layers,
        layer_prepostprocess_dropout=sizes.dropout, attention_dropout=sizes.dropout,
        relu_dropout=sizes.dropout, **overrides))  # fmt: skip
    vocab = {"input_vocab_size": sizes.vocab} if modality == "symbol" else {}
    return Transformer.from_hparams(hparams, input_modality=modality,
                                    target_vocab_size=sizes.vocab, **vocab), hparams


class Training:
    """The trainer's own step (`make_replica_step` in `make_train_loop`, default strategy), one
    `loop(iterator, steps)` call per repetition; `xla`: --xla_compile, `dtype`: activation_dtype."""

    def __init__(self, sizes, modality: str, xla: bool = False, dtype: str = "float32"):
        self.sizes, self.speech = sizes, modality == "speech"
        features = {k: tf.constant(v) for k, v in common.batch(sizes, modality).items()}
        self.model, hparams = make_model(sizes, modality, activation_dtype=dtype)
        self.model(features)
        optimizer = make_optimizer(hparams, 1e-4)
        optimizer.build(self.model.trainable_variables)
        settings = StepSettings(label_smoothing=hparams.label_smoothing, clip_grad_norm=0.0,
                                l2_weight_decay=0.0, frame_seconds=0.01)  # fmt: skip
        strategy = tf.distribute.get_strategy()
        step = make_replica_step(self.model, optimizer, settings)
        self.loop = make_train_loop(strategy, step, xla)
        self.iterator = iter(strategy.distribute_datasets_from_function(
            lambda _: tf.data.Dataset.from_tensors(features).repeat()))  # fmt: skip

    def run(self) -> dict:
        totals = self.loop(self.iterator, tf.constant(self.sizes.steps))
        loss = float(totals["loss"].numpy()) / self.sizes.steps
        if int(totals["bad_step"]) >= 0:
            raise RuntimeError(f"non-finite loss at step {int(totals['bad_step'])}: {loss}")
        units = float(totals["audio_seconds" if self.speech else "target_tokens"])
        return {"units": units, "loss": loss}

    def profile(self) -> dict:
        """One repetition under `tf.profiler`, after an untimed one that pays its start-up: the
        result, plus seconds of self time per op type (TF's `framework_op_stats`, idle excluded)."""
        from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

        for _ in range(2):
            with tf.profiler.experimental.Profile(log_dir := tempfile.mkdtemp()):
                start = time.perf_counter()
                result = {**self.run(), "profiled_seconds": time.perf_counter() - start}
            paths = glob.glob(f"{log_dir}/**/*.xplane.pb", recursive=True)
            table = json.loads(plugin.xspace_to_tools_data(paths, "framework_op_stats", {})[0])[-1]
        columns, ops = [column["id"] for column in table["cols"]], collections.Counter()
        for row in table["rows"]:
            op = dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True))
            ops[op["type"]] += op["total_self_time"] / 1e6
        return {**result, "op_seconds": dict(ops.most_common())}


class Decoding:
    """`run(mode, length)`: `BatchDecoder`'s cached beam search, or ("uncached") the same
    `beam_search` recomputing the decoder over the whole prefix each step. The EOS embedding (tied
    to the softmax) is zeroed: no beam of the untrained model ends early."""

    def __init__(self, sizes):
        self.sizes, (model, hparams) = sizes, make_model(sizes, "symbol")
        inputs = tf.constant(common.batch(sizes, "decode")["inputs"])
        self.features, self.model = {"inputs": inputs}, model
        model({"inputs": inputs, "targets": inputs})
        embeddings = model.target_embedding.embeddings
        embeddings.assign(tf.tensor_scatter_nd_update(embeddings, [[EOS_ID]],
                                                      tf.zeros([1, sizes.hidden])))  # fmt: skip
        run_config = RunConfig.from_hparams(hparams)
        self.cached = {length: BatchDecoder(model, run_config, DecodeConfig.parse(
            f"beam_size={sizes.beam},alpha={sizes.alpha},extra_length={length},"
            f"max_decode_length={length}")) for length in sizes.decode_lengths}  # fmt: skip

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32),
                                  tf.TensorSpec([], tf.int32)])  # one trace serves every length
    def uncached(self, inputs, length):
        memory, memory_mask = self.model.encode({"inputs": inputs}, training=False)

        def logits_fn(ids, step, states):  # `decode` prepends the start token
            targets = tf.pad(ids[:, 1:], [[0, 0], [0, 1]])
            return self.model.decode(targets, states["memory"], states["mask"])[:, -1], states

        return beam_search(logits_fn, tf.zeros([tf.shape(inputs)[0]], tf.int32), self.sizes.beam,
                           length, self.sizes.vocab, self.sizes.alpha,
                           states={"memory": memory, "mask": memory_mask})  # fmt: skip

    def run(self, mode: str, length: int) -> dict:
        ids = (self.cached[length](self.features)[0] if mode == "cached"
               else self.uncached(self.features["inputs"], tf.constant(length))[0].numpy())
        return {"units": self.sizes.decode_batch * length, "eos_seen": bool(np.any(ids == EOS_ID))}


class Featurize:
    """The training input pipeline (log-mel + deltas + CMVN + SpecAugment, bucketing, batching)
    over TFRecords the problem's own datagen wrote: `pipeline_batches` batches of a fresh iterator
    per repetition, timed after its first (start-up, once per training run: threads, tracing)."""

    def __init__(self, sizes, cores: int):
        class BenchSpeech(SpeechRecognitionProblem):
            num_shards = {TRAIN: 2}

            def utterances(self, data_dir, tmp_dir, split, report):
                for index in range(sizes.pipeline_batches * sizes.batch):
                    yield Utterance(f"u{index}", common.utterance(index, sizes.speech_seconds), "b")

        tf.config.threading.set_intra_op_parallelism_threads(cores)
        tf.config.threading.set_inter_op_parallelism_threads(cores)
        self.sizes, problem, data_dir = sizes, BenchSpeech(), tempfile.mkdtemp()
        problem.generate_data(data_dir, f"{data_dir}/tmp")
        hparams = problem.add_hparams(registry.hparams("transformer_librispeech_v2"))
        hparams.override_from_dict(dict(batch_size=sizes.batch, use_fixed_batch_size=True,
                                        specaugment_freq_masks=2, specaugment_time_masks=2))
        options = tf.data.Options()  # the pipeline's own intra-op setting stays
        options.threading.private_threadpool_size = cores
        dataset = pipeline.make_dataset(problem, TRAIN, data_dir, hparams, seed=1)
        self.dataset = dataset.with_options(options)

    def run(self) -> dict:
        iterator = iter(self.dataset)
        next(iterator)
        start = time.perf_counter()
        count = sum(len(next(iterator)["targets"]) for _ in range(self.sizes.pipeline_batches))
        return {"seconds": time.perf_counter() - start, "units": count * self.sizes.speech_seconds}


class Matmul:
    """`matmul_repeats` chained N x N float32 matmuls in one `tf.function` (the right matrix
    scaled by 1/sqrt(N), so values stay finite); units: GFLOP."""

    def __init__(self, sizes):
        rng, n, self.repeats = np.random.default_rng(0), sizes.matmul_size, sizes.matmul_repeats
        self.left = tf.constant(rng.standard_normal((n, n), dtype=np.float32))
        self.right = tf.constant((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32))
        self.gflop = 2 * n**3 * self.repeats / 1e9

    @tf.function
    def chain(self):
        product = self.left
        for _ in tf.range(self.repeats):
            product = tf.matmul(product, self.right)
        return tf.reduce_sum(product)

    def run(self) -> dict:
        self.chain().numpy()
        return {"units": self.gflop}
