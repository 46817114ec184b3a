"""LSTM cell with projection and clipping, in TF1 ``LSTMCell`` semantics.

:func:`lstm_step` is one step: the recurrent product, the gate math
(:func:`lstm_gates`), the projection and its clip. Two paths run it. One
is the cell's :meth:`step`, the while-loop path of
:mod:`bilm_keras.layers.recurrence`. The other is the statically unrolled
training window (:func:`bilm_keras.layers.training_recurrence.lstm_window`).
:func:`lstm_step_backward`, beside it, is its hand-written gradient, with
:func:`lstm_gates_backward` for the gate math. The training window uses it
in its backward pass. With ``fused=True``, as in the training window, the
gate math and its gradient run as XLA kernels. That is one fused loop per
step instead of a dozen elementwise ops.

The step and its gates are ``keras.ops``: the same code runs under
TensorFlow, JAX and PyTorch. The hand-written backward and the XLA
kernels serve TensorFlow's training window only.
"""

import functools
from typing import NamedTuple

import keras
import tensorflow as tf

from bilm_keras._utils.graph_function import graph_function
from bilm_keras.layers import precision
from bilm_keras.layers.initialization import initial


class StepTrace(NamedTuple):
    """What :func:`lstm_step_backward` needs of one :func:`lstm_step`.

    ``h_prev``, ``c_prev``: the step's input state. ``i``, ``j``, ``f``,
    ``o``: the gates after their nonlinearity (``f`` with the forget
    bias). ``tanh_c``: ``tanh`` of the clipped cell state. ``m``: the cell
    output before the projection, ``o * tanh_c``. ``c_inside``,
    ``h_inside``: 1.0 where the cell and projection clips pass the
    gradient (``-clip <= x <= clip``), 0.0 elsewhere, and None without a
    clip.
    """

    h_prev: tf.Tensor
    c_prev: tf.Tensor
    i: tf.Tensor
    j: tf.Tensor
    f: tf.Tensor
    o: tf.Tensor
    tanh_c: tf.Tensor
    m: tf.Tensor
    c_inside: tf.Tensor | None
    h_inside: tf.Tensor | None


def _inside(x, bound):
    """1.0 where ``clip_by_value(x, -bound, bound)`` passes the gradient
    (TF's ``minimum``/``maximum`` gradients: ``-bound <= x <= bound``)."""
    return keras.ops.cast(keras.ops.abs(x) <= bound, x.dtype)


def lstm_gates(z, c_prev, *, forget_bias=1.0, cell_clip=None,
               clip_mask=True):
    """The elementwise part of a step: the gates, the cell state and the
    cell output, from ``z = z_input + h_prev W_h``.

    Args:
        z: `(..., 4 * units)` (gate order i, j, f, o).
        c_prev: `(..., units)`.
        forget_bias, cell_clip: the cell's. A clip of None or 0 is none.
        clip_mask: compute the cell clip's gradient mask. False gives
            None.

    Returns:
        ``(c, m, i, j, f, o, tanh_c, c_inside)``, each `(..., units)`.
        They are the clipped cell state, the cell output ``o * tanh_c``,
        and the gates after their nonlinearity (``f`` with the forget
        bias). Last comes the cell clip's gradient mask, None without a
        clip or ``clip_mask``.
    """
    ops = keras.ops
    i, j, f, o = ops.split(z, 4, axis=-1)  # 4 x (..., U)
    i, j = ops.sigmoid(i), ops.tanh(j)
    f, o = ops.sigmoid(f + forget_bias), ops.sigmoid(o)
    c = f * c_prev + i * j  # (..., U)
    c_inside = None
    if cell_clip:
        if clip_mask:
            c_inside = _inside(c, cell_clip)
        c = ops.clip(c, -cell_clip, cell_clip)
    tanh_c = ops.tanh(c)
    return c, o * tanh_c, i, j, f, o, tanh_c, c_inside


# Nine tensors: what lstm_gates computed and the backward pass needs,
# each under its name in the forward math, so the gradient reads as the
# derivation (a tuple would hide which is which).
def lstm_gates_backward(d_m, d_c, c_prev, i, j, f, o, tanh_c, c_inside):
    """The gradient of :func:`lstm_gates`: ``(d_z, d_c_prev)``.

    Args:
        d_m: `(..., units)` the gradient reaching the cell output ``m``.
        d_c: `(..., units)` the gradient reaching ``c`` from the next step.
        c_prev, i, j, f, o, tanh_c, c_inside: the step's, as
            :func:`lstm_gates` saw and returned them.

    Returns:
        `(..., 4 * units)` the gradient of ``z`` and `(..., units)` that of
        ``c_prev``.
    """
    d_c = d_c + d_m * o * (1.0 - tanh_c * tanh_c)
    if c_inside is not None:
        d_c = d_c * c_inside
    d_z = keras.ops.concatenate([
        d_c * j * i * (1.0 - i),  # d i
        d_c * i * (1.0 - j * j),  # d j
        d_c * c_prev * f * (1.0 - f),  # d f
        d_m * tanh_c * o * (1.0 - o),  # d o
    ], axis=-1)  # (..., G)
    return d_z, d_c * f


@functools.lru_cache(maxsize=None)
def _compiled_gates(forget_bias, cell_clip):
    """:func:`lstm_gates` and :func:`lstm_gates_backward` as XLA kernels
    (``jit_compile=True``) for one cell's constants: each step's dozen
    elementwise ops become one fused loop."""
    def gates(z, c_prev):
        out = lstm_gates(z, c_prev, forget_bias=forget_bias,
                         cell_clip=cell_clip)
        return out[:-1] if out[-1] is None else out

    def gates_backward(d_m, d_c, c_prev, i, j, f, o, tanh_c, *c_inside):
        return lstm_gates_backward(d_m, d_c, c_prev, i, j, f, o, tanh_c,
                                   c_inside[0] if c_inside else None)

    return (graph_function(gates, jit_compile=True),
            graph_function(gates_backward, jit_compile=True))


# Pure tensor math called inside traced loops: the weights and the
# cell's settings come as arguments, not as a layer, so one function
# serves the cell, the stacked directions and the hand-written backward.
def lstm_step(z_input, c_prev, h_prev, recurrent_kernel,
              projection_kernel=None, *, forget_bias=1.0, cell_clip=None,
              proj_clip=None, trace=False, fused=False,
              compute_dtype="float32"):
    """One TF1 ``LSTMCell`` step from its precomputed input contribution.

    Pure tensor math, batched over any leading axes ``...``: `(batch,)` for
    one cell, `(directions, batch)` for several cells' stacked weights.

    Args:
        z_input: `(..., 4 * units)` ``x W_x + b`` (gate order i, j, f, o).
        c_prev, h_prev: `(..., units)`, `(..., output_dim)` the state.
        recurrent_kernel: `(output_dim, 4 * units)` (or with the leading
            axes but the last, e.g. `(directions, output_dim, 4 * units)`),
            the kernel's rows for ``h``.
        projection_kernel: `(units, output_dim)` (same rule) or None (no
            projection).
        forget_bias, cell_clip, proj_clip: the cell's (clips None or 0:
            none).
        trace: also return the :class:`StepTrace` for
            :func:`lstm_step_backward`. False keeps the per-step loops free
            of the clip masks.
        fused: run :func:`lstm_gates` as one XLA kernel, as the training
            window does. The math is the same, to float rounding.
        compute_dtype: the dtype of the two products, their operands
            rounded to it. The state, the gates and ``h`` stay float32
            (:mod:`~bilm_keras.layers.precision`).

    Returns:
        ``(c, h)``, `(..., units)` and `(..., output_dim)`. With ``trace``,
        ``(c, h, StepTrace)``.
    """
    # U=units, P=output dim, G=4U; "..." the leading (batch) axes
    z = z_input + precision.matmul(
        h_prev, recurrent_kernel, compute_dtype)  # (..., G)
    if fused:
        c, m, i, j, f, o, tanh_c, *c_inside = _compiled_gates(
            float(forget_bias), float(cell_clip or 0.0))[0](z, c_prev)
        c_inside = c_inside[0] if c_inside else None
    else:
        c, m, i, j, f, o, tanh_c, c_inside = lstm_gates(
            z, c_prev, forget_bias=forget_bias, cell_clip=cell_clip,
            clip_mask=trace)
    h = m if projection_kernel is None else precision.matmul(
        m, projection_kernel, compute_dtype)  # (..., P)
    h_inside = None
    if proj_clip:
        if trace:
            h_inside = _inside(h, proj_clip)
        h = keras.ops.clip(h, -proj_clip, proj_clip)
    if not trace:
        return c, h
    return c, h, StepTrace(h_prev, c_prev, i, j, f, o, tanh_c, m, c_inside,
                           h_inside)


def lstm_step_backward(d_h, d_c, step, recurrent_kernel,
                       projection_kernel=None, *, fused=False,
                       compute_dtype="float32"):
    """The gradient of one :func:`lstm_step`, written out by hand.

    It is the chain rule through the forward lines above, in reverse. First
    come the projection clip and the projection. Then
    :func:`lstm_gates_backward`: ``m = o * tanh(c)``, the cell clip,
    ``c = f * c_prev + i * j`` and the gates' nonlinearities. Last comes
    ``z = z_input + h_prev W_h``. Weight gradients are left to the caller,
    which can add them up over many steps in one matmul (``h_prev^T dz``,
    ``m^T dp``).

    Args:
        d_h: `(..., output_dim)` the gradient reaching the step's output
            ``h`` (its own output's plus the next step's ``d h_prev``).
        d_c: `(..., units)` the gradient reaching ``c`` from the next step.
        step: the step's :class:`StepTrace`.
        recurrent_kernel, projection_kernel: as given to :func:`lstm_step`.
        fused: :func:`lstm_gates_backward` as one XLA kernel.
        compute_dtype: the dtype of the two products, as in
            :func:`lstm_step`.

    Returns:
        ``(d_z, d_p, d_c_prev, d_h_prev)``. ``d_z`` `(..., 4 * units)` is
        the gradient of ``z``, which is that of ``z_input``. ``d_p``
        `(..., output_dim)` is that of the projection's output before the
        clip. The last two are those of the input state.
    """
    # U=units, P=output dim, G=4U
    d_p = d_h  # (..., P)
    if step.h_inside is not None:
        d_p = d_p * step.h_inside
    d_m = (d_p if projection_kernel is None else precision.matmul(
        d_p, projection_kernel, compute_dtype,
        transpose_b=True))  # (..., U)
    saved = (step.c_prev, step.i, step.j, step.f, step.o, step.tanh_c)
    if fused:
        # the constants do not enter the backward kernel
        d_z, d_c_prev = _compiled_gates(1.0, 0.0)[1](
            d_m, d_c, *saved,
            *(() if step.c_inside is None else (step.c_inside,)))
    else:
        d_z, d_c_prev = lstm_gates_backward(d_m, d_c, *saved, step.c_inside)
    d_h_prev = precision.matmul(d_z, recurrent_kernel, compute_dtype,
                                transpose_b=True)  # (..., P)
    return d_z, d_p, d_c_prev, d_h_prev


def _transposed(initializer):
    """``initializer`` drawn in TF1's shape and transposed: a transposed
    variable starts from the values the TF1-layout one would have (the same
    seed, the same model)."""
    if isinstance(initializer, str) and initializer == "zeros":
        return initializer
    initializer = keras.initializers.get(initializer)

    def transposed(shape, dtype=None):
        return keras.ops.transpose(
            initializer(tuple(reversed(shape)), dtype))

    return transposed


@keras.saving.register_keras_serializable(package="bilm_keras")
class LSTMCellWithProjection(keras.layers.Layer):
    """TF1 ``tf.nn.rnn_cell.LSTMCell(num_proj=..., cell_clip, proj_clip)``.

    One step, with ``[x, h]`` the concatenated input and previous output::

        i, j, f, o = split([x, h] @ kernel + bias, 4)
        c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * tanh(j)
        c = clip(c, -cell_clip, cell_clip)
        h = clip((sigmoid(o) * tanh(c)) @ projection_kernel,
                 -proj_clip, proj_clip)

    :attr:`kernel` and :attr:`projection_kernel` are TF1's layout:
    ``(input_dim + output_dim, 4 * units)`` with gate order i, j, f, o, and
    ``(units, output_dim)``. So bilm-tf's ``W_0``, ``B`` and ``W_P_0`` mean
    what they meant there. The variables hold their transposes,
    :attr:`kernel_t` `(4 * units, input_dim + output_dim)` and
    :attr:`projection_kernel_t` `(output_dim, units)`. The inference
    recurrence (:func:`~bilm_keras.layers.recurrence.run_inference_columns`)
    multiplies ``kernel_t @ [x; h]``, a product with the weights on the
    left. A CPU runs it 1.2-1.3x faster than ``[x, h] @ kernel`` at batch
    64-128 (``bench/RESULTS.md``). Keeping one layout only costs no memory.
    Training and the Keras path read :attr:`kernel`, an exact transpose
    made where it is read. For speed, the sequence-level code splits the
    product. :meth:`input_contribution` does ``x @ kernel[:input_dim] +
    bias`` for all time steps in one matmul, and :meth:`step` adds
    ``h @ kernel[input_dim:]``.

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
        precision.float32_io(self)

    @property
    def state_size(self):
        return (self.units, self.output_dim)

    def build(self, input_shape):
        self.input_dim = int(input_shape[-1])
        self.kernel_t = self.add_weight(
            autocast=False,
            name="kernel_t",
            shape=(4 * self.units, self.input_dim + self.output_dim),
            initializer=_transposed(initial("glorot_uniform")),
        )
        self.bias = self.add_weight(
            autocast=False,
            name="bias", shape=(4 * self.units,), initializer="zeros"
        )
        if self.projection_dim:
            self.projection_kernel_t = self.add_weight(
                autocast=False,
                name="projection_kernel_t",
                shape=(self.projection_dim, self.units),
                initializer=_transposed(initial("glorot_uniform")),
            )

    @property
    def kernel(self):
        """`(input_dim + output_dim, 4 * units)`: TF1's ``W_0`` (gates i, j,
        f, o), the transpose of :attr:`kernel_t`."""
        return keras.ops.transpose(self.kernel_t)

    @property
    def projection_kernel(self):
        """`(units, output_dim)`: TF1's ``W_P_0``, the transpose of
        :attr:`projection_kernel_t`."""
        return keras.ops.transpose(self.projection_kernel_t)

    def input_contribution(self, inputs, input_kernel=None):
        """``inputs @ kernel[:input_dim] + bias`` for `(..., input_dim)`.

        Loops pass ``input_kernel()`` computed once before the loop.
        """
        if input_kernel is None:
            input_kernel = self.input_kernel()
        # (B, T, D) @ (D, 4U) -> (B, T, 4U)
        return precision.tensordot(inputs, input_kernel,
                                   self.compute_dtype) + self.bias

    def input_kernel(self):
        """`(input_dim, 4 * units)`: the rows of ``kernel`` for ``x``."""
        return keras.ops.transpose(self.kernel_t[:, : self.input_dim])

    def recurrent_kernel(self):
        """`(output_dim, 4 * units)`: the rows of ``kernel`` for ``h``."""
        return keras.ops.transpose(self.kernel_t[:, self.input_dim:])

    def step(self, z_input, c_prev, h_prev, recurrent_kernel=None,
             projection_kernel=None):
        """One step (:func:`lstm_step`) from the precomputed input
        contribution `(B, 4U)`: ``(c, h)``.

        Loops pass ``recurrent_kernel()`` and ``projection_kernel`` computed
        once before the loop: each is a transpose of a variable, which
        inside the loop would be made again at every step.
        """
        if recurrent_kernel is None:
            recurrent_kernel = self.recurrent_kernel()
        if projection_kernel is None and self.projection_dim:
            projection_kernel = self.projection_kernel
        return lstm_step(
            z_input, c_prev, h_prev, recurrent_kernel, projection_kernel,
            forget_bias=self.forget_bias, cell_clip=self.cell_clip,
            proj_clip=self.proj_clip, compute_dtype=self.compute_dtype,
        )

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
