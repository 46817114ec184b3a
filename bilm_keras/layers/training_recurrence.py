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


def _clip(x, bound):
    """``clip_by_value(x, -bound, bound)`` and its gradient mask (TF's
    ``minimum``/``maximum`` gradients pass where ``-bound <= x <= bound``)."""
    if not bound:
        return x, None
    inside = tf.cast(tf.abs(x) <= bound, x.dtype)
    return tf.clip_by_value(x, -bound, bound), inside


def lstm_window(z_inputs, c0, h0, recurrent_kernel, projection_kernel, *,
                forget_bias=1.0, cell_clip=None, proj_clip=None):
    """One LSTM layer over a window of static length, with a hand-written
    backward pass.

    The forward pass is :meth:`LSTMCellWithProjection.step` at every step.
    The backward pass runs the recurrence backwards keeping only what must
    be sequential (``dm = dp W_P^T`` and ``dh = dz W_h^T`` per step) and
    computes the weight gradients after the loop as two large matmuls,
    ``H^T dZ`` and ``M^T dP`` over all `batch * time` rows, where
    automatic differentiation would do ``2 * time`` small ones and add them
    up. It gives autodiff's gradients to float rounding.

    Args:
        z_inputs: `(batch, time, 4 * units)` input contributions
            ``x W_x + b`` (gate order i, j, f, o); ``time`` static.
        c0, h0: `(batch, units)`, `(batch, output_dim)` initial state.
        recurrent_kernel: `(output_dim, 4 * units)`, the cell's
            ``kernel[input_dim:]``.
        projection_kernel: `(units, output_dim)` or None (no projection).
        forget_bias, cell_clip, proj_clip: the cell's.

    Returns:
        ``outputs (batch, time, output_dim), (c, h)`` after the last step.
    """
    # B=batch, T=time, U=units, P=output dim, G=4U
    n_steps = z_inputs.shape[1]
    if n_steps is None:
        raise ValueError(
            "lstm_window: the window length (axis 1 of z_inputs) must be "
            f"static, found shape {z_inputs.shape}"
        )
    has_projection = projection_kernel is not None

    @tf.custom_gradient
    def window(z_inputs, c0, h0, w_h, w_p):
        c, h = c0, h0
        saved = []  # per step: what the backward pass needs
        outputs = []
        for z_t in tf.unstack(z_inputs, num=n_steps, axis=1):  # (B, G)
            h_prev, c_prev = h, c
            z = z_t + tf.matmul(h_prev, w_h)  # (B, G)
            i, j, f, o = tf.split(z, 4, axis=1)  # 4 x (B, U)
            i, j = tf.sigmoid(i), tf.tanh(j)
            f, o = tf.sigmoid(f + forget_bias), tf.sigmoid(o)
            c, c_inside = _clip(f * c_prev + i * j, cell_clip)  # (B, U)
            tanh_c = tf.tanh(c)
            m = o * tanh_c  # (B, U)
            p = tf.matmul(m, w_p) if has_projection else m  # (B, P)
            h, h_inside = _clip(p, proj_clip)
            saved.append((h_prev, c_prev, i, j, f, o, c_inside, tanh_c, m,
                          h_inside))
            outputs.append(h)

        def grad(d_outputs, d_c, d_h):
            # d_outputs (B, T, P); d_c (B, U), d_h (B, P): final-state grads
            d_out = tf.unstack(d_outputs, num=n_steps, axis=1)
            d_z_steps, d_p_steps = [None] * n_steps, [None] * n_steps
            for t in reversed(range(n_steps)):
                (h_prev, c_prev, i, j, f, o, c_inside, tanh_c, _,
                 h_inside) = saved[t]
                d_p = d_out[t] + d_h  # (B, P)
                if h_inside is not None:
                    d_p = d_p * h_inside
                d_p_steps[t] = d_p
                d_m = (tf.matmul(d_p, w_p, transpose_b=True)
                       if has_projection else d_p)  # (B, U)
                d_c = d_c + d_m * o * (1.0 - tanh_c * tanh_c)
                if c_inside is not None:
                    d_c = d_c * c_inside
                d_z = tf.concat([
                    d_c * j * i * (1.0 - i),  # d i
                    d_c * i * (1.0 - j * j),  # d j
                    d_c * c_prev * f * (1.0 - f),  # d f
                    d_m * tanh_c * o * (1.0 - o),  # d o
                ], axis=1)  # (B, G)
                d_z_steps[t] = d_z
                d_c = d_c * f  # to c_prev
                d_h = tf.matmul(d_z, w_h, transpose_b=True)  # (B, P)
            # weight gradients: one matmul over every (row, step)
            d_z_all = tf.stack(d_z_steps, axis=1)  # (B, T, G)
            h_prev_all = tf.stack([s[0] for s in saved], axis=1)  # (B, T, P)
            d_w_h = tf.matmul(
                tf.reshape(h_prev_all, (-1, h_prev_all.shape[-1])),
                tf.reshape(d_z_all, (-1, d_z_all.shape[-1])),
                transpose_a=True,
            )  # (P, G)
            d_w_p = None
            if has_projection:
                m_all = tf.stack([s[8] for s in saved], axis=1)  # (B, T, U)
                d_p_all = tf.stack(d_p_steps, axis=1)  # (B, T, P)
                d_w_p = tf.matmul(
                    tf.reshape(m_all, (-1, m_all.shape[-1])),
                    tf.reshape(d_p_all, (-1, d_p_all.shape[-1])),
                    transpose_a=True,
                )  # (U, P)
            return d_z_all, d_c, d_h, d_w_h, d_w_p

        return (tf.stack(outputs, axis=1), c, h), grad  # (B, T, P)

    # the weights go in as tensors (read here): their gradients flow back
    # to the variables through ordinary autodiff
    recurrent_kernel = tf.convert_to_tensor(recurrent_kernel)
    if has_projection:
        projection_kernel = tf.convert_to_tensor(projection_kernel)
    else:  # a placeholder input; its gradient is None
        projection_kernel = tf.zeros((0,), z_inputs.dtype)
    outputs, c, h = window(z_inputs, c0, h0, recurrent_kernel,
                           projection_kernel)
    return outputs, (c, h)


def run_unrolled(cell, z_inputs, c0, h0):
    """:func:`lstm_window` with the weights of ``cell`` (a built
    :class:`LSTMCellWithProjection`); see there for shapes."""
    _, recurrent_kernel = tf.split(
        cell.kernel, [cell.input_dim, cell.output_dim]
    )
    return lstm_window(
        z_inputs, c0, h0, recurrent_kernel,
        cell.projection_kernel if cell.projection_dim else None,
        forget_bias=cell.forget_bias, cell_clip=cell.cell_clip,
        proj_clip=cell.proj_clip,
    )


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
        # kernel split once (its gradient is one concat, where slices
        # would each give a dense zero-padded kernel-sized gradient)
        input_kernel, recurrent_kernel = tf.split(
            cell.kernel, [cell.input_dim, cell.output_dim]
        )
        z = tf.tensordot(x_in, input_kernel, 1) + cell.bias  # (B, T, 4U)
        h, state = lstm_window(
            z, c0, h0, recurrent_kernel,
            cell.projection_kernel if cell.projection_dim else None,
            forget_bias=cell.forget_bias, cell_clip=cell.cell_clip,
            proj_clip=cell.proj_clip,
        )  # (B, T, P)
        if stack.use_skip_connections and i > 0:
            h = h + x_in  # no padding to zero: every row is full
        outputs.append(h)
        final_states.append(state)
        x = h
    return outputs, final_states
