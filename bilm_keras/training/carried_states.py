"""The LSTM states a run carries from one step to the next, kept in its
checkpoints: :class:`CarriedStates`.

Training is truncated backpropagation through time: every row of the batch
is a continuous stream of sentences, and each step starts from the states
the previous step ended with (:mod:`.train_step`). A run resumed from a
checkpoint that starts its rows from zero states computes other losses
than the uninterrupted run from its first step on. With these states in
the checkpoint (and the data stream, the step's seeds), a run preempted at
a step and resumed ends with the same weights as one never stopped.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bilm_keras.models.language_model import LanguageModel


class CarriedStates:
    """The states of every LSTM layer of both directions, for the global
    batch, as variables a checkpoint holds.

    Each replica carries ``{direction: [(c, h), ...]}`` for its
    ``batch_size / R`` rows, ``c`` `(rows, dim)` and ``h``
    `(rows, projection_dim)`. Here they are stored as the global batch's
    rows, in replica order. That is the order of the global batch's rows,
    since replica ``r`` trains rows ``[r * B / R, (r + 1) * B / R)``. There
    is one variable per layer and state, named ``DIRECTION:LAYER:c`` or
    ``...:h``.

    Args:
        lm: the model (its directions, layers and sizes).
        batch_size: the global batch.

    Attributes:
        current: the replicas' states the next step starts from. The
            training loop keeps it up to date, and :meth:`capture` saves
            it.
    """

    def __init__(self, lm: LanguageModel, batch_size: int):
        self.batch_size = batch_size
        self._template = lm.zero_states(batch_size)
        self.variables = {}
        for direction, layers in self._template.items():
            for layer, (c, h) in enumerate(layers):
                for name, zeros in (("c", c), ("h", h)):
                    key = f"{direction}:{layer}:{name}"
                    self.variables[key] = tf.Variable(
                        zeros, trainable=False,
                        name=f"lstm_state_{direction}_{layer}_{name}")
        # in the order tf.nest flattens the states
        self._keys = sorted(self.variables, key=_nest_order)
        self.current = None

    def capture(self, strategy: tf.distribute.Strategy) -> None:
        """Copies :attr:`current` (what the last step returned) into the
        variables, before a checkpoint is written. Under
        ``MultiWorkerMirroredStrategy`` this gathers from every worker (a
        collective: every worker calls it at the same step, as they all
        save)."""
        for key, value in zip(self._keys, tf.nest.flatten(self.current)):
            self.variables[key].assign(strategy.gather(value, axis=0))

    def distribute(self, strategy: tf.distribute.Strategy):
        """The states held (restored from a checkpoint) as each replica's
        initial states: replica ``r`` gets rows ``[r * B / R, (r + 1) *
        B / R)``."""
        values = [self.variables[key].numpy() for key in self._keys]
        per_replica = self.batch_size // strategy.num_replicas_in_sync
        template = tf.nest.map_structure(lambda t: t[:per_replica],
                                         self._template)

        def replica_states(ctx):
            first = ctx.replica_id_in_sync_group * per_replica
            return tf.nest.pack_sequence_as(template, [
                tf.constant(np.ascontiguousarray(v[first:first + per_replica]))
                for v in values])

        return strategy.experimental_distribute_values_from_function(
            replica_states)


def as_step_states(strategy: tf.distribute.Strategy, states):
    """``states`` (per-replica values) in the form the step function
    returns them, so that its second call does not trace it again.

    ``strategy.run`` returns a value of one local replica as a plain
    tensor, as on a worker of a ``MultiWorkerMirroredStrategy`` cluster or
    a ``MirroredStrategy`` on one device. It is not the per-replica value
    ``experimental_distribute_values_from_function`` built. Given those,
    the step's second call had another input type. It traced the whole
    step again, taking about as long as the first trace.
    """
    def as_returned(value):
        local = strategy.experimental_local_results(value)
        return local[0] if len(local) == 1 else value

    return tf.nest.map_structure(as_returned, states)


def _nest_order(key: str) -> tuple:
    """``tf.nest``'s order of ``{direction: [(c, h), ...]}``: directions
    sorted, layers in order, ``c`` before ``h``."""
    direction, layer, name = key.split(":")
    return direction, int(layer), name
