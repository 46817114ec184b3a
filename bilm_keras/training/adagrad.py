"""Adagrad that updates only the rows of a sparse gradient."""

import keras
import tensorflow as tf


class RowSparseAdagrad(keras.optimizers.Adagrad):
    """Keras' Adagrad, with bilm-tf's sparse update for ``IndexedSlices``.

    Keras' Adagrad scatters a sparse gradient's rows but divides by
    ``sqrt(accumulator + epsilon)`` over the whole accumulator, reading
    (and, after a scatter, copying) a `(n_tokens_vocab, dim)` table every step.
    Here a sparse gradient touches only its rows::

        accumulator[rows] += g * g
        variable[rows] -= lr * g / sqrt(accumulator[rows] + epsilon)

    the same numbers as the dense update on those rows. The others do not
    move in either. The gradient must list each row once, as the training
    step sums repeats first. Dense gradients take Keras' path. The
    variables and their checkpoint names are Adagrad's.

    :meth:`accumulator` and :meth:`set_accumulator` read and set one
    variable's accumulator. A run continued from another optimizer's
    state, such as bilm-tf's checkpoints, uses them.
    """

    def accumulator(self, variable):
        """The accumulator of ``variable`` (the optimizer must be built
        with it)."""
        return self._accumulators[self._get_variable_index(variable)]

    def set_accumulator(self, variable, value) -> None:
        """Sets the accumulator of ``variable`` to ``value``, an array of
        its shape (the initial value plus the squared gradients so far).

        Raises:
            ValueError: ``value`` has another shape than ``variable``.
        """
        accumulator = self.accumulator(variable)
        shape = tuple(getattr(value, "shape", ()))
        if shape != tuple(accumulator.shape):
            raise ValueError(
                f"accumulator of {variable.path}: expected shape "
                f"{tuple(accumulator.shape)}, found {shape}")
        accumulator.assign(value)

    def update_step(self, gradient, variable, learning_rate):
        if not isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        # R = rows in the gradient, D = the variable's row size
        accumulator = self.accumulator(variable)
        lr = tf.cast(learning_rate, variable.dtype)
        rows = gradient.indices  # (R,)
        values = tf.cast(gradient.values, variable.dtype)  # (R, D)
        self.assign_add(accumulator, tf.IndexedSlices(values * values, rows))
        # the rows of the (tf.)Variable: a gather, not a read of the table
        sums = tf.gather(accumulator.value, rows)  # (R, D)
        step = lr * values / tf.sqrt(sums + self.epsilon)
        self.assign_sub(variable, tf.IndexedSlices(step, rows))
