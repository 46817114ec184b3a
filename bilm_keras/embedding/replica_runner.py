"""The bulk embedder's LSTM batches on one device or several.

:class:`ReplicaRunner` runs the traced ``encode`` graph on up to one batch
per device at a time, by a ``tf.distribute.MirroredStrategy`` over the
devices. The results come in the order given, identical to one device's."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from bilm_keras._utils.graph_function import graph_function
from bilm_keras._utils.settings import SettingError


def resolve_devices(devices: Sequence[str] | str | None) -> list[str]:
    """``devices`` as TensorFlow's full logical device names.

    None or ``"all"`` means every GPU if there are two or more. Otherwise
    it is ``[]``, one device, chosen by TensorFlow as always. Names are
    matched without case and without the ``/device:`` prefix (``"gpu:1"``,
    ``"GPU:1"``).

    Raises:
        SettingError: a device that is not there, naming the ones there.
    """
    available = [d.name for d in tf.config.list_logical_devices()]
    if devices is None or devices == "all" or list(devices) == ["all"]:
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        return gpus if len(gpus) > 1 else []
    if isinstance(devices, str):
        devices = [devices]
    short = {name.split("device:")[-1].upper(): name for name in available}
    resolved = []
    for device in devices:
        key = str(device).split("device:")[-1].lstrip("/").upper()
        if key not in short:
            raise SettingError(
                "devices", f"expected some of {', '.join(sorted(short))}, "
                           f"found {device!r}")
        if short[key] in resolved:
            raise SettingError("devices", f"{device!r} given twice")
        resolved.append(short[key])
    return resolved


class ReplicaRunner:
    """Runs ``encode(table, positions, lengths)`` on batches, one per
    device at a time.

    Args:
        encode: the Python function of the ``encode`` graph, traced once
            here for the replicas.
        graph: ``encode`` traced for one device.
        devices: :func:`resolve_devices`'s names. With two or more, the
            batches go ``n_replicas`` at a time through a
            ``MirroredStrategy``. With one, they run on it. With none, they
            run where TensorFlow places them.
    """

    def __init__(self, encode: Callable, graph: Callable,
                 devices: list[str]):
        self.devices = devices
        self._graph = graph
        self._strategy = None
        if len(devices) > 1:
            self._strategy = tf.distribute.MirroredStrategy(devices)
            # one graph: every replica runs the "encode" graph's function
            # on its own batch (shapes relaxed after the first traces)
            self._replicated = graph_function(
                lambda table, positions, lengths: self._strategy.run(
                    encode, args=(table, positions, lengths)),
                reduce_retracing=True)

    @property
    def n_replicas(self) -> int:
        """Batches run at once (one per device)."""
        return len(self.devices) if self._strategy is not None else 1

    def run(self, table, inputs: list) -> list[dict]:
        """``encode`` of up to :attr:`n_replicas` batches ``inputs``
        (``(positions, lengths)`` each), in their order."""
        if self._strategy is None:
            if self.devices:  # one device chosen
                with tf.device(self.devices[0]):
                    return [self._graph(table, *batch) for batch in inputs]
            return [self._graph(table, *batch) for batch in inputs]
        # idle replicas (the last group) get <S> </S> alone, dropped after
        idle = (np.zeros((1, 2), np.int32), np.full((1,), 2, np.int32))
        padded = list(inputs) + [idle] * (self.n_replicas - len(inputs))
        strategy = self._strategy

        def replica_value(k):
            return lambda context: tf.constant(
                padded[context.replica_id_in_sync_group][k])

        positions, lengths = (
            strategy.experimental_distribute_values_from_function(
                replica_value(k)) for k in (0, 1))
        outputs = self._replicated(table, positions, lengths)
        per_replica = {
            direction: [strategy.experimental_local_results(h)
                        for h in layers]
            for direction, layers in outputs.items()}
        return [{direction: [h[r] for h in layers]
                 for direction, layers in per_replica.items()}
                for r in range(len(inputs))]
