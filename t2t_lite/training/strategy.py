"""Choosing a `tf.distribute` strategy: one CPU, several GPUs, workers, Cloud TPU."""

from __future__ import annotations

import json
import os

import tensorflow as tf
from absl import logging

STRATEGIES = ("auto", "default", "mirrored", "multi_worker", "tpu")


def _workers_in_tf_config() -> int:
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    cluster = config.get("cluster", {})
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def resolve_strategy_name(name: str, tpu: str | None) -> str:
    """The strategy to run: `name`, or for `auto` the one that fits the run.

    `auto` -> tpu with --tpu, multi_worker when TF_CONFIG names >1 worker,
    mirrored with >1 GPU, else default.
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown --strategy={name}; use one of {', '.join(STRATEGIES)}.")
    if name != "auto":
        return name
    if tpu:
        return "tpu"
    if _workers_in_tf_config() > 1:
        return "multi_worker"
    if len(tf.config.list_logical_devices("GPU")) > 1:
        return "mirrored"
    return "default"


def make_strategy(
    name: str = "auto",
    tpu: str | None = None,
    tpu_zone: str | None = None,
    gcp_project: str | None = None,
) -> tf.distribute.Strategy:
    """Builds the strategy; for TPUs, connects to and initializes the TPU system."""
    name = resolve_strategy_name(name, tpu)
    logging.info("distribution strategy: %s", name)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        if _workers_in_tf_config() < 1:
            raise ValueError(
                "--strategy=multi_worker needs TF_CONFIG naming the cluster and this task."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu or "", zone=tpu_zone, project=gcp_project
    )
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the task that owns output_dir (single-worker runs are chief)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def is_tpu(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, tf.distribute.TPUStrategy)
