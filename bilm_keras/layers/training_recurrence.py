"""A statically unrolled LSTM stack for fixed-length training windows.

Training reads windows of exactly ``unroll_steps`` tokens, every row full
(``LanguageModel`` gives every row the window's length), so the
length-aware ``tf.while_loop`` of :func:`~bilm_keras.layers.lstm_stack.
run_recurrence` can become a Python loop over a static number of steps, as
bilm-tf's ``static_rnn`` did in training. The graph then holds every step's
ops side by side: no ``TensorArray`` reads/writes, no per-iteration loop
bookkeeping in the forward and backward passes, and the runtime may run
the two directions' steps in parallel. On the 2-core CPU the forward +
backward of the mid-size model's LSTMs is about 2x faster this way (see
``bench/train_throughput.py --compare``).

The math is the same as :class:`~bilm_keras.layers.LSTMStack` on
full-length rows: the same cells (the same variables), the input
contribution hoisted out of the loop, the same skip connections and input
dropout, so losses and gradients agree to float rounding
(``tests/training/test_fast_path.py``).
"""

import tensorflow as tf


def run_unrolled(cell, z_inputs, c0, h0):
    """:meth:`LSTMCellWithProjection.step` over every step of a window of
    static length.

    The step's math is the cell's, written out here so that the recurrent
    kernel ``kernel[input_dim:]`` is sliced once per window, not once per
    step: in the backward pass every slice of a variable becomes a dense
    zero-padded gradient of the whole kernel, and 20 of them per layer cost
    more than the matmuls.

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        z_inputs: `(batch, time, 4 * units)` input contributions; ``time``
            must be known when the function is traced.
        c0, h0: `(batch, units)`, `(batch, output_dim)` initial state.

    Returns:
        ``outputs (batch, time, output_dim), (c, h)``: the state after the
        last step (every row runs all ``time`` steps).
    """
    # B=batch, T=time, U=units, P=output dim
    n_steps = z_inputs.shape[1]
    if n_steps is None:
        raise ValueError(
            "run_unrolled: the window length (axis 1 of z_inputs) must be "
            f"static, found shape {z_inputs.shape}"
        )
    recurrent_kernel = cell.kernel[cell.input_dim:]  # (P, 4U), once
    projection = (
        tf.convert_to_tensor(cell.projection_kernel)  # (U, P), once
        if cell.projection_dim else None
    )
    c, h = c0, h0
    outputs = []
    for z_t in tf.unstack(z_inputs, num=n_steps, axis=1):  # T x (B, 4U)
        z = z_t + tf.matmul(h, recurrent_kernel)  # (B, 4U)
        i, j, f, o = tf.split(z, 4, axis=1)  # 4 x (B, U), TF1 gate order
        c = (tf.sigmoid(f + cell.forget_bias) * c
             + tf.sigmoid(i) * tf.tanh(j))
        if cell.cell_clip:
            c = tf.clip_by_value(c, -cell.cell_clip, cell.cell_clip)
        h = tf.sigmoid(o) * tf.tanh(c)  # (B, U)
        if projection is not None:
            h = tf.matmul(h, projection)  # (B, P)
        if cell.proj_clip:
            h = tf.clip_by_value(h, -cell.proj_clip, cell.proj_clip)
        outputs.append(h)
    return tf.stack(outputs, axis=1), (c, h)  # (B, T, P)


def run_stack_unrolled(stack, inputs, initial_states=None, training=False):
    """:meth:`LSTMStack.call` on full-length rows, statically unrolled.

    Args:
        stack: a built :class:`LSTMStack` (its cells and options are used).
        inputs: `(batch, time, input_dim)` with a static ``time``.
        initial_states: list over layers of ``(c, h)``, or None for zeros.
        training: bool; input dropout as the stack's.

    Returns:
        ``(outputs, final_states)`` as :meth:`LSTMStack.call` with every
        row's length equal to ``time``.
    """
    if initial_states is None:
        initial_states = stack.zero_states(tf.shape(inputs)[0])
    outputs, final_states = [], []
    x = inputs
    for i, (cell, (c0, h0)) in enumerate(zip(stack.cells, initial_states)):
        x_in = x
        if training and stack.dropout > 0:
            x_in = tf.nn.dropout(x_in, rate=stack.dropout)
        z = cell.input_contribution(x_in)  # (B, T, 4U), one matmul
        h, state = run_unrolled(cell, z, c0, h0)  # (B, T, P)
        if stack.use_skip_connections and i > 0:
            h = h + x_in  # no padding to zero: every row is full
        outputs.append(h)
        final_states.append(state)
        x = h
    return outputs, final_states
