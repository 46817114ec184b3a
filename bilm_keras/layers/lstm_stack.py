"""A stack of projected LSTM layers for one direction, length-aware, and
the helpers every LSTM path shares.

The biLM's LSTMs run through three paths:

==========  =====================  ===================  ========================
path        entry point            called by            why it exists
==========  =====================  ===================  ========================
while loop  :meth:`LSTMStack.      ``BiLMBackbone``     variable lengths (a row
            call` ->               (``encode``, the     stops at its length, its
            :func:`run_            layer call), the     state carried), given
            recurrence`            SavedModel export,   initial states, autodiff
                                   ``LanguageModel``    gradients, any graph
                                   with                 (export, a window length
                                   ``unroll_windows=    unknown at trace time)
                                   False``
infer       :meth:`LSTMStack.      the bulk embedding   bounded memory: the
            infer` ->              path                 input contributions a
            :func:`run_            (``embed_            block of steps at a
            inference_             sentences``)         time; zero states, no
            recurrence`                                 dropout, no gradients
unrolled    :func:`~bilm_keras.    ``LanguageModel``    training speed on
window      layers.training_       (training and        fixed-length windows of
            recurrence.run_        evaluation, by       full rows: a static
            stacks_unrolled` ->    default)             loop, both directions
            ``lstm_window``                             batched, a hand-written
                                                        backward pass
==========  =====================  ===================  ========================

All three run the same cells (the same variables) and the same step,
:func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_step`; each
layer's input dropout and skip connection come from :func:`layer_input`
and :func:`add_skip`; the backward direction reads each row reversed within
its length (:func:`reverse_within_lengths`). ``tests/training/
test_fast_path.py`` and ``tests/layers/test_lstm_stack_speed_paths.py``
check that the paths agree.
"""

import functools

import keras
import tensorflow as tf

from bilm_keras.layers.dropout import dropout, fold_seed
from bilm_keras.layers.lstm_cell_with_projection import LSTMCellWithProjection


def reverse_within_lengths(x, lengths, time_major=False):
    """Reverses each row's first ``lengths[b]`` positions; the padding past
    them stays where it is (the backward LM's reading order).

    Args:
        x: `(batch, time, ...)`, or `(time, batch, ...)` with
            ``time_major``.
        lengths: `(batch,)` int.
        time_major: layout of ``x``.

    Returns:
        ``x`` reversed within the lengths, same shape and layout.
    """
    if time_major:
        return tf.reverse_sequence(x, lengths, seq_axis=0, batch_axis=1)
    return tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)


def layer_input(x, layer, rate, seed=None, training=False,
                time_major=False):
    """Layer ``layer``'s input: ``x`` with input dropout in training.

    bilm-tf's ``DropoutWrapper(input_keep_prob)``: each LSTM layer's input
    is dropped at ``rate``, with the mask drawn from ``fold_seed(seed,
    layer)`` (:func:`~bilm_keras.layers.dropout.dropout`; None: TF's
    stateful generator).

    Args:
        x: `(batch, time, dim)`, or `(time, batch, dim)` with
            ``time_major``.
        layer: int, the layer's index in its stack.
        rate: float, the stack's dropout rate.
        seed: None or the stack's `(2,)` int seed.
        training: bool; no dropout otherwise.
        time_major: layout of ``x``.
    """
    if not (training and rate > 0):
        return x
    return dropout(x, rate, fold_seed(seed, layer), time_major=time_major)


def add_skip(h, x_in, layer, use_skip_connections, mask=None):
    """Layer ``layer``'s output with its skip connection.

    TF1 ``ResidualWrapper``: layers above the first add their input to
    their output (the recurrent state keeps the plain cell output).

    Args:
        h: the layer's cell outputs, zero past each row's length.
        x_in: the layer's input (after dropout), same shape.
        layer: int, the layer's index in its stack.
        use_skip_connections: bool.
        mask: None (every row full) or a float length mask broadcasting
            against ``h``: ``dynamic_rnn`` zeroes the output past a row's
            length, the input added there with it.
    """
    if not use_skip_connections or layer == 0:
        return h
    h = h + x_in
    return h if mask is None else h * mask


def _time_major_mask(lengths, n_steps, dtype):
    """`(time, batch, 1)`: 1.0 before each row's length, 0.0 past it."""
    mask = tf.sequence_mask(lengths, n_steps, dtype)  # (B, T)
    return tf.transpose(mask)[:, :, None]  # (T, B, 1)


def _masked_step(cell, z_t, t, c, h, outputs, lengths, w_h, keep_t=None):
    """Step ``t`` with ``dynamic_rnn``'s length semantics: rows past their
    length keep their state and output zeros. ``keep_t`` `(batch, 1)`:
    0.0 on rows whose state is zeroed before this step (a sentence starts
    there), 1.0 elsewhere; None: no reset.

    Returns:
        ``(c, h, outputs)`` with step ``t`` written to the TensorArray.
    """
    if keep_t is not None:
        c, h = c * keep_t, h * keep_t
    c_new, h_new = cell.step(z_t, c, h, w_h)
    active = t < lengths  # (B, 1)
    c = tf.where(active, c_new, c)
    h = tf.where(active, h_new, h)
    return c, h, outputs.write(t, tf.where(active, h_new, 0.0))


def run_recurrence(cell, z_inputs, lengths, c0, h0, time_major=False,
                   resets=None):
    """Runs ``cell.step`` over time with ``dynamic_rnn``'s length semantics.

    Past a row's length the output is zero and the state is carried
    unchanged, so the final state is the state after the row's last token
    (the initial state for a row of length 0).

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        z_inputs: `(batch, time, 4 * units)` input contributions, or
            `(time, batch, 4 * units)` with ``time_major``.
        lengths: `(batch,)` int32.
        c0, h0: `(batch, units)`, `(batch, output_dim)` initial state.
        time_major: layout of ``z_inputs`` and of the returned outputs.
        resets: None, or `(batch, time)` (`(time, batch)` with
            ``time_major``) float, 1.0 where a row's state is zeroed before
            the step (a sentence starts there).

    Returns:
        ``outputs (batch, time, output_dim)`` (time first with
        ``time_major``), ``(c, h)``.
    """
    # B=batch, T=time, U=units, P=output dim
    z_time_major = (
        z_inputs if time_major else tf.transpose(z_inputs, (1, 0, 2))
    )  # (T, B, 4U)
    n_steps = tf.shape(z_time_major)[0]
    # step t reads its input from a TensorArray, whose gradient is one
    # (B, 4U) slice a step (the gradient of z[t] would be a dense (T, B, 4U)
    # tensor a step)
    read = tf.TensorArray(z_inputs.dtype, size=n_steps).unstack(
        z_time_major
    ).read
    outputs = tf.TensorArray(z_inputs.dtype, size=n_steps)
    lengths = tf.reshape(tf.cast(lengths, tf.int32), (-1, 1))  # (B, 1)
    w_h = cell.recurrent_kernel()  # (P, 4U), sliced once, not every step
    keep = None
    if resets is not None:
        resets = resets if time_major else tf.transpose(resets)  # (T, B)
        keep = 1.0 - tf.cast(resets, z_inputs.dtype)[:, :, None]  # (T, B, 1)

    def body(t, c, h, outputs):
        return (t + 1,) + _masked_step(
            cell, read(t), t, c, h, outputs, lengths, w_h,
            None if keep is None else keep[t])

    _, c, h, outputs = tf.while_loop(
        lambda t, *_: t < n_steps,
        body,
        (tf.constant(0), c0, h0, outputs),
    )
    out = outputs.stack()  # (T, B, P)
    if not time_major:
        out = tf.transpose(out, (1, 0, 2))  # (B, T, P)
    out = tf.ensure_shape(out, [None, None, cell.output_dim])
    return out, (c, h)


def run_inference_recurrence(cell, x, lengths, block_steps=16,
                             fuse_gates=False):
    """Inference only: :func:`run_recurrence` from zero states, with the
    input contributions computed ``block_steps`` steps at a time.

    The input contributions of all ``T`` steps at once, `(T, B, 4U)`, are
    the largest tensor of inference. Computing them a block of steps at a
    time, inside the loop, bounds that buffer at `(block_steps, B, 4U)`
    while each matmul still covers ``block_steps * B`` rows
    (``bench/README.md`` has the memory and the speed). Same values as
    :func:`run_recurrence` on ``cell.input_contribution(x)``; no gradients.

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        x: `(time, batch, input_dim)` the layer's inputs.
        lengths: `(batch,)` int32.
        block_steps: int (or a scalar int32 tensor), steps per
            input-contribution matmul; None: all steps in one.
        fuse_gates: bool. True: each step's elementwise part (the gates,
            the cell update, the clips and the length masks) runs as two
            XLA-compiled kernels around the two matmuls, which stay
            TensorFlow's (:func:`fused_inference_step`); the same
            arithmetic, transcendental functions to XLA's float32
            round-off.

    Returns:
        ``outputs (time, batch, output_dim)``, zero past each row's length.
    """
    # B=batch, T=time, K=block steps, D=input dim, U=units, P=output dim
    n_steps, batch = tf.shape(x)[0], tf.shape(x)[1]
    lengths = tf.reshape(tf.cast(lengths, tf.int32), (-1, 1))  # (B, 1)
    w_x = cell.input_kernel()  # (D, 4U), sliced once, not every block
    w_h = cell.recurrent_kernel()  # (P, 4U)
    outputs = tf.TensorArray(x.dtype, size=n_steps)
    if block_steps is None:
        block_steps = tf.maximum(n_steps, 1)

    def block(start, c, h, outputs):
        stop = tf.minimum(start + block_steps, n_steps)
        z = cell.input_contribution(x[start:stop], w_x)  # (K, B, 4U)

        def step(t, c, h, outputs):
            if fuse_gates:
                c, h, out = fused_inference_step(cell, z[t - start], c, h,
                                                 t < lengths, w_h)
                return t + 1, c, h, outputs.write(t, out)
            return (t + 1,) + _masked_step(cell, z[t - start], t, c, h,
                                           outputs, lengths, w_h)

        _, c, h, outputs = tf.while_loop(
            lambda t, *_: t < stop, step, (start, c, h, outputs))
        return stop, c, h, outputs

    c0 = tf.zeros((batch, cell.units), x.dtype)
    h0 = tf.zeros((batch, cell.output_dim), x.dtype)
    # one block at a time: a block's input contributions are not computed
    # before the previous block's steps have used theirs
    _, _, _, outputs = tf.while_loop(
        lambda start, *_: start < n_steps, block,
        (tf.constant(0), c0, h0, outputs), parallel_iterations=1,
    )
    out = outputs.stack()  # (T, B, P)
    return tf.ensure_shape(out, [None, None, cell.output_dim])


def fused_inference_step(cell, z_t, c, h, active, w_h):
    """One inference step of ``cell`` with ``dynamic_rnn``'s length
    semantics, its elementwise work in two XLA kernels.

    :func:`_masked_step` runs about fifteen elementwise TensorFlow ops per
    step over `(B, U)`-sized tensors, each a pass through memory: about a
    third of a step's time at batch 64 on a 2-core CPU. Here
    ``z_t + h @ W_h``, the gates, the clipped cell update, ``o * tanh(c)``
    and the length mask of ``c`` are one XLA kernel, and the projection's
    clip and the masks of ``h`` and the output another; the two matmuls
    stay TensorFlow's (oneDNN on CPU: faster than XLA's own).

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        z_t: `(B, 4U)` the step's input contribution (bias included).
        c, h: `(B, U)`, `(B, P)` the state.
        active: `(B, 1)` bool, rows still inside their length.
        w_h: `(P, 4U)` the recurrent kernel.

    Returns:
        ``(c, h, output)``: the new state (kept where not ``active``) and
        the step's output (zero where not ``active``).
    """
    gates, finish = _fused_step_kernels(
        float(cell.forget_bias), float(cell.cell_clip or 0.0),
        float(cell.proj_clip or 0.0))
    c, m = gates(z_t, tf.matmul(h, w_h), c, active)
    p = m if not cell.projection_dim else tf.matmul(
        m, cell.projection_kernel)
    h, out = finish(p, h, active)
    return c, h, out


@functools.lru_cache(maxsize=None)
def _fused_step_kernels(forget_bias, cell_clip, proj_clip):
    """The two XLA-compiled parts of :func:`fused_inference_step` for a
    cell's constants (0.0: no clip), made once per setting."""

    @tf.function(jit_compile=True)
    def gates(z_t, z_h, c_prev, active):
        z = z_t + z_h  # as lstm_step: z_input + h @ W_h
        i, j, f, o = tf.split(z, 4, axis=-1)
        i, j = tf.sigmoid(i), tf.tanh(j)
        f, o = tf.sigmoid(f + forget_bias), tf.sigmoid(o)
        c = f * c_prev + i * j
        if cell_clip:
            c = tf.clip_by_value(c, -cell_clip, cell_clip)
        m = o * tf.tanh(c)
        return tf.where(active, c, c_prev), m

    @tf.function(jit_compile=True)
    def finish(p, h_prev, active):
        if proj_clip:
            p = tf.clip_by_value(p, -proj_clip, proj_clip)
        return tf.where(active, p, h_prev), tf.where(active, p, 0.0)

    return gates, finish


#: Steps per input-contribution matmul in :meth:`LSTMStack.infer` by
#: default (the caller may pass None: all steps at once); it bounds the
#: largest inference buffer at `(block_steps, batch, 4 * units)`;
#: ``bench/README.md`` has what it saves and costs.
INFERENCE_BLOCK_STEPS = 16


@keras.saving.register_keras_serializable(package="bilm_keras")
class LSTMStack(keras.layers.Layer):
    """``n_layers`` :class:`LSTMCellWithProjection` layers run in one direction.

    Layer 0 reads the token embeddings; layer ``l`` reads layer ``l-1``'s
    output. With ``use_skip_connections`` layers above the first add their
    input to their output (TF1 ``ResidualWrapper``: the recurrent state keeps
    the plain cell output). Dropout, in training only, applies to each
    layer's input, as bilm-tf's ``DropoutWrapper(input_keep_prob)``.

    Args:
        units, projection_dim, cell_clip, proj_clip: of every cell.
        n_layers: int.
        use_skip_connections: bool.
        dropout: float. Input dropout rate in training.

    Call arguments:
        inputs: `(batch, time, input_dim)`.
        lengths: `(batch,)` int; positions past a row's length give zeros.
        initial_states: list over layers of ``(c, h)``, or None for zeros.
        training: bool.
        dropout_seed: None or a `(2,)` int seed; layer ``l``'s input mask
            is then drawn from ``fold_seed(dropout_seed, l)``
            (:mod:`bilm_keras.layers.dropout`).
        resets: None or `(batch, time)` float, 1.0 where a row's states
            (every layer's) are zeroed before the step: the LM starts each
            sentence from zero states in training, as embedding does.

    Returns:
        ``(outputs, final_states)``: a list of `(batch, time, projection_dim)`
        per layer and a list of ``(c, h)`` per layer.
    """

    def __init__(
        self,
        units,
        projection_dim,
        n_layers,
        cell_clip=None,
        proj_clip=None,
        use_skip_connections=False,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = units
        self.projection_dim = projection_dim
        self.n_layers = n_layers
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.dropout = dropout
        proj = projection_dim if projection_dim < units else None
        # One attribute per cell (not a list): tf.train.Checkpoint and
        # SavedModel do not see into Keras 3's tracked lists.
        for i in range(n_layers):
            setattr(self, f"cell{i}", LSTMCellWithProjection(
                units, proj, cell_clip, proj_clip, name=f"cell{i}"
            ))

    @property
    def cells(self):
        """The ``n_layers`` cells, bottom first."""
        return [getattr(self, f"cell{i}") for i in range(self.n_layers)]

    def build(self, input_shape):
        dim = int(input_shape[-1])
        for cell in self.cells:
            cell.build((None, dim))
            dim = cell.output_dim

    def zero_states(self, batch_size):
        return [
            (tf.zeros((batch_size, cell.units)),
             tf.zeros((batch_size, cell.output_dim)))
            for cell in self.cells
        ]

    def call(self, inputs, lengths, initial_states=None, training=False,
             dropout_seed=None, resets=None):
        # B=batch, T=time, D=input dim, U=units, P=projection dim.
        # The stack runs time-major: the input contributions (the largest
        # tensors, (T, B, 4U)) are computed in the recurrence's layout, so
        # they are never transposed; only the narrow inputs and outputs are.
        x = tf.transpose(inputs, (1, 0, 2))  # (T, B, D)
        if resets is not None:
            resets = tf.transpose(resets)  # (T, B)
        outputs, final_states = self._run_time_major(
            x, lengths, initial_states, training, dropout_seed, resets
        )
        outputs = [tf.transpose(h, (1, 0, 2)) for h in outputs]  # (B, T, P)
        return outputs, final_states

    def infer(self, inputs, lengths, block_steps=INFERENCE_BLOCK_STEPS,
              fuse_gates=False):
        """Inference only: zero initial states, time-major, no dropout.

        The same values as :meth:`call` (``training=False``) through
        :func:`run_inference_recurrence`, which computes the input
        contributions ``block_steps`` steps at a time: less memory, no
        gradients. Used by the bulk embedding path.

        Args:
            inputs: `(time, batch, input_dim)`.
            lengths: `(batch,)` int32.
            block_steps: int (or a scalar int32 tensor), steps per
                input-contribution matmul; None: all steps at once.
            fuse_gates: bool, each step's elementwise work in XLA kernels
                (:func:`fused_inference_step`).

        Returns:
            A list of `(time, batch, projection_dim)` per layer, zero past
            each row's length.
        """
        mask = _time_major_mask(lengths, tf.shape(inputs)[0], inputs.dtype)
        outputs, x = [], inputs
        for i, cell in enumerate(self.cells):
            h = run_inference_recurrence(cell, x, lengths, block_steps,
                                         fuse_gates)
            h = add_skip(h, x, i, self.use_skip_connections, mask)
            outputs.append(h)
            x = h
        return outputs

    def _run_time_major(self, x, lengths, initial_states, training,
                        dropout_seed=None, resets=None):
        """The layers over `(T, B, D)` inputs (``resets`` `(T, B)`):
        outputs `(T, B, P)`, states."""
        if initial_states is None:
            initial_states = self.zero_states(tf.shape(x)[1])
        mask = _time_major_mask(lengths, tf.shape(x)[0], x.dtype)
        outputs, final_states = [], []
        for i, (cell, (c0, h0)) in enumerate(zip(self.cells, initial_states)):
            x_in = layer_input(x, i, self.dropout, dropout_seed, training,
                               time_major=True)
            # one large matmul for all time steps, outside the recurrence
            z = cell.input_contribution(x_in)  # (T, B, 4U)
            h, state = run_recurrence(
                cell, z, lengths, c0, h0, time_major=True, resets=resets,
            )  # (T, B, P)
            h = add_skip(h, x_in, i, self.use_skip_connections, mask)
            outputs.append(h)
            final_states.append(state)
            x = h
        return outputs, final_states

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            projection_dim=self.projection_dim,
            n_layers=self.n_layers,
            cell_clip=self.cell_clip,
            proj_clip=self.proj_clip,
            use_skip_connections=self.use_skip_connections,
            dropout=self.dropout,
        )
        return config
