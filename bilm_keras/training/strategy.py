"""The ``tf.distribute`` strategy a training run uses."""

from __future__ import annotations

import json
import os
from typing import Optional, Sequence

import tensorflow as tf


def cluster_workers() -> int:
    """Number of workers ``TF_CONFIG`` names (0 when it is unset)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG: not valid JSON ({e})") from None
    cluster = config.get("cluster", {})
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def make_strategy(
    n_gpus: Optional[int] = None, devices: Optional[Sequence[str]] = None
) -> tf.distribute.Strategy:
    """The strategy for this process.

    * ``TF_CONFIG`` naming several workers: ``MultiWorkerMirroredStrategy``.
      Each worker uses its visible GPUs, or its CPU.
    * several devices: ``MirroredStrategy`` over them. They are
      ``devices``, or the first ``n_gpus`` visible GPUs, by default all of
      them.
    * one device: the default strategy.

    Args:
        n_gpus: GPUs to use. None is every visible GPU, and 0 the CPU.
        devices: explicit device names, for example two logical CPUs in
            tests. They override ``n_gpus``.

    Raises:
        ValueError: ``n_gpus`` asks for more GPUs than are visible.
    """
    if cluster_workers() > 1:
        return tf.distribute.MultiWorkerMirroredStrategy()
    if devices is None:
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        if n_gpus is not None and n_gpus > len(gpus):
            raise ValueError(
                f"--n_gpus: asked for {n_gpus} GPUs, found {len(gpus)} "
                f"visible ({', '.join(gpus) or 'none'})"
            )
        devices = gpus if n_gpus is None else gpus[:n_gpus]
    devices = list(devices)
    if len(devices) > 1:
        return tf.distribute.MirroredStrategy(devices)
    if len(devices) == 1 and "GPU" in devices[0].upper():
        return tf.distribute.OneDeviceStrategy(devices[0])
    return tf.distribute.get_strategy()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this worker writes checkpoints, options and summaries."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return (
        resolver.task_type == "worker" and resolver.task_id == 0
        and not has_chief
    )
