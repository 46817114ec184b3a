"""LSTM cell with projection and clipping, in TF1 ``LSTMCell`` semantics."""

import keras
import tensorflow as tf

from bilm_keras.layers.initialization import initial


@keras.saving.register_keras_serializable(package="bilm_keras")
class LSTMCellWithProjection(keras.layers.Layer):
    """TF1 ``tf.nn.rnn_cell.LSTMCell(num_proj=..., cell_clip, proj_clip)``.

    One step, with ``[x, h]`` the concatenated input and previous output::

        i, j, f, o = split([x, h] @ kernel + bias, 4)
        c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * tanh(j)
        c = clip(c, -cell_clip, cell_clip)
        h = clip((sigmoid(o) * tanh(c)) @ projection_kernel,
                 -proj_clip, proj_clip)

    The kernel keeps TF1's layout, ``(input_dim + output_dim, 4 * units)``
    with gate order i, j, f, o, so bilm-tf's ``W_0``, ``B`` and ``W_P_0``
    load unchanged. For speed the sequence-level code splits the product:
    :meth:`input_contribution` does ``x @ kernel[:input_dim] + bias`` for all
    time steps in one matmul, and :meth:`step` adds ``h @ kernel[input_dim:]``.

    Args:
        units: int. Cell size.
        projection_dim: int or None. Output size (None: ``units``, no
            projection).
        cell_clip: float or None. Bound on the cell state.
        proj_clip: float or None. Bound on the projected output.
        forget_bias: float. Added to the forget gate (TF1 default 1.0).

    Call arguments:
        inputs: `(batch, input_dim)` one time step.
        states: ``(c, h)`` with shapes `(batch, units)`, `(batch, output_dim)`.

    Returns:
        ``(h, (c, h))`` as TF1 cells do.

    Reference:
        Sak, Senior, Beaufays, "Long Short-Term Memory Recurrent Neural
        Network Architectures for Large Scale Acoustic Modeling", 2014.
    """

    def __init__(
        self,
        units,
        projection_dim=None,
        cell_clip=None,
        proj_clip=None,
        forget_bias=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = units
        self.projection_dim = projection_dim
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.forget_bias = forget_bias
        self.output_dim = projection_dim or units

    @property
    def state_size(self):
        return (self.units, self.output_dim)

    def build(self, input_shape):
        self.input_dim = int(input_shape[-1])
        self.kernel = self.add_weight(
            name="kernel",
            shape=(self.input_dim + self.output_dim, 4 * self.units),
            initializer=initial("glorot_uniform"),
        )
        self.bias = self.add_weight(
            name="bias", shape=(4 * self.units,), initializer="zeros"
        )
        if self.projection_dim:
            self.projection_kernel = self.add_weight(
                name="projection_kernel",
                shape=(self.units, self.projection_dim),
                initializer=initial("glorot_uniform"),
            )

    def input_contribution(self, inputs, input_kernel=None):
        """``inputs @ kernel[:input_dim] + bias`` for `(..., input_dim)`.

        Loops pass ``input_kernel()`` computed once before the loop.
        """
        if input_kernel is None:
            input_kernel = self.input_kernel()
        # (B, T, D) @ (D, 4U) -> (B, T, 4U)
        return tf.tensordot(inputs, input_kernel, 1) + self.bias

    def input_kernel(self):
        """`(input_dim, 4 * units)`: the rows of ``kernel`` for ``x``."""
        return self.kernel[: self.input_dim]

    def recurrent_kernel(self):
        """`(output_dim, 4 * units)`: the rows of ``kernel`` for ``h``."""
        return self.kernel[self.input_dim:]

    def step(self, z_input, c_prev, h_prev, recurrent_kernel=None):
        """One step from the precomputed input contribution `(B, 4U)`.

        Loops pass ``recurrent_kernel()`` computed once before the loop:
        slicing ``kernel`` inside it copies the slice at every step.
        """
        if recurrent_kernel is None:
            recurrent_kernel = self.recurrent_kernel()
        z = z_input + tf.matmul(h_prev, recurrent_kernel)
        i, j, f, o = tf.split(z, 4, axis=1)  # 4 x (B, U)
        c = (tf.sigmoid(f + self.forget_bias) * c_prev
             + tf.sigmoid(i) * tf.tanh(j))
        if self.cell_clip:
            c = tf.clip_by_value(c, -self.cell_clip, self.cell_clip)
        h = tf.sigmoid(o) * tf.tanh(c)  # (B, U)
        if self.projection_dim:
            h = tf.matmul(h, self.projection_kernel)  # (B, P)
        if self.proj_clip:
            h = tf.clip_by_value(h, -self.proj_clip, self.proj_clip)
        return c, h

    def call(self, inputs, states):
        c, h = self.step(self.input_contribution(inputs), *states)
        return h, (c, h)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            projection_dim=self.projection_dim,
            cell_clip=self.cell_clip,
            proj_clip=self.proj_clip,
            forget_bias=self.forget_bias,
        )
        return config
