"""Statically unrolled LSTM stacks for fixed-length training windows.

Training reads windows of exactly ``unroll_steps`` tokens, every row full,
because ``LanguageModel`` gives every row the window's length. So the
length-aware ``tf.while_loop`` of
:func:`~bilm_keras.layers.recurrence.run_recurrence` can become a Python
loop over a static number of steps, as bilm-tf's ``static_rnn`` did in
training. Unrolling alone does not make it faster on a CPU. Five things on
top of it do, measured in ``bench/RESULTS.md`` under "Training fast path:
why each lever":

* The recurrent kernel is split off the kernel once per window, not sliced
  at every step. In the backward pass, each slice of a variable becomes a
  dense, zero-padded kernel-sized gradient, added up over the steps.
* A hand-written backward pass (:func:`lstm_window`) keeps only the
  sequential part inside the loop. It computes the weight gradients as two
  large matmuls after it, where autodiff does two small ones per step and
  adds them up.
* The forward and backward directions' stacks, of the same shapes with
  their own weights, run as one batched computation. Every step is one
  batched matmul and one set of elementwise ops for both directions.
* Each step's gate math and its gradient run as XLA kernels
  (``fused=True``). That is one fused loop instead of a dozen small ops,
  each a pass over the step's tensors.
* The layers run as a pipeline over chunks of the window, of
  :func:`run_stacks_unrolled`'s ``chunk_steps``. Layer ``l + 1``'s chunk
  ``k`` runs beside layer ``l``'s chunk ``k + 1``. That makes two
  sequential chains at once on a CPU's cores, forward and backward.

The math is that of :class:`~bilm_keras.layers.LSTMStack` on full-length
rows. It has the same cells and variables, and the same step:
:func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_step`, with
:func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_gates` fused or
not. It has the same input dropout and skip connections:
:func:`~bilm_keras.layers.recurrence.layer_input` and
:func:`~bilm_keras.layers.recurrence.add_skip`. So losses and gradients
agree to float rounding, as ``tests/training/test_fast_path.py`` checks.
"""

import tensorflow as tf

from bilm_keras.layers import precision
from bilm_keras.layers.lstm_cell_with_projection import (
    lstm_step,
    lstm_step_backward,
)
from bilm_keras.layers.recurrence import add_skip, layer_input


# Long and with many arguments, by design: one tf.custom_gradient, whose
# forward and backward passes must share the closure of the saved
# activations; the arguments are lstm_step's (weights and settings).
def lstm_window(z_inputs, c0, h0, recurrent_kernel, projection_kernel, *,
                forget_bias=1.0, cell_clip=None, proj_clip=None, keep=None,
                fused=True, compute_dtype="float32"):
    """LSTM layers of ``D`` directions over a window of static length, with
    a hand-written backward pass.

    The forward pass is the cells' step,
    :func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_step`, at
    every step, batched over the leading direction axis. The backward pass
    runs the recurrence backwards through
    :func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_step_backward`.
    It keeps only what must be sequential, ``dm = dp W_P^T`` and
    ``dh = dz W_h^T`` per step. It computes the weight gradients after the
    loop as two large matmuls, ``H^T dZ`` and ``M^T dP`` over all
    `batch * time` rows. It gives autodiff's gradients to float rounding.

    Args:
        z_inputs: `(D, batch, time, 4 * units)` input contributions
            ``x W_x + b``, in gate order i, j, f, o. ``time`` is static.
        c0, h0: `(D, batch, units)`, `(D, batch, output_dim)` initial state.
        recurrent_kernel: `(D, output_dim, 4 * units)`, the cells'
            ``kernel[input_dim:]``.
        projection_kernel: `(D, units, output_dim)` or None (no
            projection).
        forget_bias, cell_clip, proj_clip: the cells' (the same for all).
        keep: None, or `(D, batch, time)` float. It is 0.0 where a row's
            state is zeroed before the step because a sentence starts
            there, 1.0 elsewhere. The gradient does not flow back through
            a reset.
        fused: run each step's elementwise work as one XLA kernel. That
            work is the cells' ``lstm_gates`` and its gradient
            (:mod:`~bilm_keras.layers.lstm_cell_with_projection`). False
            runs plain TensorFlow ops.
        compute_dtype: the dtype of every product, forward and backward.
            The kernels cast once per window. The state, the gates, the
            outputs and the gradients stay float32
            (:mod:`~bilm_keras.layers.precision`).

    Returns:
        ``outputs (D, batch, time, output_dim), (c, h)`` after the last
        step, `(D, batch, units)` and `(D, batch, output_dim)`.
    """
    # D=directions, B=batch, T=time, U=units, P=output dim, G=4U
    n_steps = z_inputs.shape[2]
    if n_steps is None:
        raise ValueError(
            "lstm_window: the window length (axis 2 of z_inputs) must be "
            f"static, found shape {z_inputs.shape}"
        )
    has_projection = projection_kernel is not None

    def flat_rows(x):  # (D, B, T, K) -> (D, B*T, K)
        return tf.reshape(x, (tf.shape(x)[0], -1, x.shape[-1]))

    if keep is None:
        keep_steps = [None] * n_steps
    else:
        keep_steps = tf.unstack(
            tf.cast(keep, z_inputs.dtype)[..., None], num=n_steps, axis=2
        )  # T x (D, B, 1)

    @tf.custom_gradient
    def window(z_inputs, c0, h0, w_h, w_p):
        # the kernels in the products' dtype, cast once for the window
        w_h = tf.cast(w_h, compute_dtype)
        w_p = tf.cast(w_p, compute_dtype) if has_projection else None
        c, h = c0, h0
        steps = []  # per step: the StepTrace the backward pass needs
        outputs = []
        for t, z_t in enumerate(tf.unstack(z_inputs, num=n_steps, axis=2)):
            # z_t (D, B, G); a sentence start zeroes the state first
            if keep_steps[t] is not None:
                c, h = c * keep_steps[t], h * keep_steps[t]
            c, h, step = lstm_step(
                z_t, c, h, w_h, w_p, forget_bias=forget_bias,
                cell_clip=cell_clip, proj_clip=proj_clip, trace=True,
                fused=fused, compute_dtype=compute_dtype,
            )  # (D, B, U), (D, B, P)
            steps.append(step)
            outputs.append(h)

        def grad(d_outputs, d_c, d_h):
            # d_outputs (D, B, T, P); d_c, d_h: the final state's gradients
            d_out = tf.unstack(d_outputs, num=n_steps, axis=2)
            d_z_steps, d_p_steps = [None] * n_steps, [None] * n_steps
            for t in reversed(range(n_steps)):
                d_z_steps[t], d_p_steps[t], d_c, d_h = lstm_step_backward(
                    d_out[t] + d_h, d_c, steps[t], w_h, w_p, fused=fused,
                    compute_dtype=compute_dtype,
                )  # (D, B, G), (D, B, P), (D, B, U), (D, B, P)
                if keep_steps[t] is not None:  # through the reset
                    d_c, d_h = d_c * keep_steps[t], d_h * keep_steps[t]
            # weight gradients: one matmul over every (row, step)
            d_z_all = tf.stack(d_z_steps, axis=2)  # (D, B, T, G)
            h_prev_all = tf.stack([s.h_prev for s in steps], axis=2)
            d_w_h = precision.matmul(
                flat_rows(h_prev_all), flat_rows(d_z_all), compute_dtype,
                transpose_a=True)  # (D, P, G)
            d_w_p = None
            if has_projection:
                m_all = tf.stack([s.m for s in steps], axis=2)  # (D, B, T, U)
                d_p_all = tf.stack(d_p_steps, axis=2)  # (D, B, T, P)
                d_w_p = precision.matmul(
                    flat_rows(m_all), flat_rows(d_p_all), compute_dtype,
                    transpose_a=True)  # (D, U, P)
            return d_z_all, d_c, d_h, d_w_h, d_w_p

        return (tf.stack(outputs, axis=2), c, h), grad  # (D, B, T, P)

    # the weights go in as tensors: their gradients flow back to the
    # variables through ordinary autodiff
    recurrent_kernel = tf.convert_to_tensor(recurrent_kernel)
    if has_projection:
        projection_kernel = tf.convert_to_tensor(projection_kernel)
    else:  # a placeholder input; its gradient is None
        projection_kernel = tf.zeros((0,), z_inputs.dtype)
    outputs, c, h = window(z_inputs, c0, h0, recurrent_kernel,
                           projection_kernel)
    return outputs, (c, h)


#: steps per chunk of the layer pipeline (:func:`run_stacks_unrolled`)
PIPELINE_CHUNK_STEPS = 5


def time_chunks(n_steps, chunk_steps):
    """``[(start, stop), ...]`` covering ``range(n_steps)`` in chunks of
    ``chunk_steps``, the last maybe shorter. It is one chunk when
    ``chunk_steps`` is None or 0."""
    if not chunk_steps or chunk_steps >= n_steps:
        return [(0, n_steps)]
    return [(start, min(start + chunk_steps, n_steps))
            for start in range(0, n_steps, chunk_steps)]


def _dropout_masks(shape, dtype, layer, rate, dropout_seeds, training):
    """Layer ``layer``'s input dropout as a multiplier, or None without
    dropout.

    The multiplier is `(D, B, T, I)`, ``1 / (1 - rate)`` where kept and 0.0
    where dropped. It is the mask
    :func:`~bilm_keras.layers.recurrence.layer_input` applies to an input
    of ``shape`` `(D, B, T, I)`. It is drawn from ones, with no data
    dependency, so it can be applied a chunk at a time."""
    if not (training and rate > 0):
        return None
    ones = tf.ones(shape, dtype)
    if dropout_seeds is None:  # one stateful mask over all the stacks
        return layer_input(ones, layer, rate, training=training)
    return tf.stack([  # each stack's own mask, as LSTMStack.call draws it
        layer_input(ones_d, layer, rate, seed, training)
        for ones_d, seed in zip(tf.unstack(ones, num=len(dropout_seeds)),
                                dropout_seeds)
    ])


def run_stacks_unrolled(stacks, inputs, initial_states=None,
                        training=False, dropout_seeds=None, resets=None,
                        chunk_steps=PIPELINE_CHUNK_STEPS, fused_gates=True):
    """:meth:`LSTMStack.call` of several stacks on full-length rows,
    statically unrolled and batched over the stacks.

    The window runs in chunks of ``chunk_steps`` steps, layer by layer
    within a chunk, each layer's state carried from chunk to chunk. Layer
    ``l + 1``'s chunk ``k`` needs only layer ``l``'s chunk ``k``. So the
    graph lets it run beside layer ``l``'s chunk ``k + 1``, a pipeline over
    the layers. The backward pass runs the same way in reverse. That makes
    two sequential chains at once on a CPU's cores instead of one twice as
    long. The numbers are those of one chunk over the whole window
    (``chunk_steps=None``) to float rounding, since the weight gradients
    are summed over the chunks.

    Args:
        stacks: built :class:`LSTMStack` s of the same shapes and options
            (the backbone's forward and backward stacks).
        inputs: per stack `(batch, time, input_dim)`, static ``time``.
        initial_states: per stack a list over layers of ``(c, h)``, or
            None (or a None entry) for zeros.
        training: bool. Input dropout at the stacks' rate.
        dropout_seeds: None, or per stack a `(2,)` int seed. Stack ``d``'s
            layer ``l`` input mask is then drawn from
            ``fold_seed(dropout_seeds[d], l)``, the mask
            :meth:`LSTMStack.call` draws with the same seed.
        resets: None, or per stack `(batch, time)` float, 1.0 where a row's
            states are zeroed before the step (:meth:`LSTMStack.call`).
        chunk_steps: int. The pipeline's chunk length in steps. None or 0
            runs the whole window as one chunk, with no pipeline.
        fused_gates: bool, :func:`lstm_window`'s ``fused``.

    Returns:
        per stack ``(outputs, final_states)`` as :meth:`LSTMStack.call`
        with every row's length equal to ``time``.
    """
    # D=stacks, B=batch, T=time, I=layer input dim, U=units, P=output dim
    first = stacks[0]
    for stack in stacks[1:]:
        if stack.get_config() | {"name": first.name} != first.get_config():
            raise ValueError(
                f"run_stacks_unrolled: stack {stack.name} differs from "
                f"{first.name} in shape or options"
            )
    initial_states = initial_states or [None] * len(stacks)
    initial_states = [
        states if states is not None
        else stack.zero_states(tf.shape(x)[0])
        for stack, x, states in zip(stacks, inputs, initial_states)
    ]
    x = tf.stack(inputs)  # (D, B, T, I)
    chunks = time_chunks(x.shape[2], chunk_steps)
    keep = None if resets is None else 1.0 - tf.cast(
        tf.stack(resets), x.dtype)  # (D, B, T)
    layer_inputs = [x[:, :, start:stop] for start, stop in chunks]
    outputs, final_states = [], []
    for layer in range(first.n_layers):
        cells = [stack.cells[layer] for stack in stacks]
        cell = cells[0]
        # the input dropout's multiplier over the whole window
        mask = _dropout_masks(
            [len(stacks), tf.shape(x)[1], x.shape[2], cell.input_dim],
            x.dtype, layer, first.dropout, dropout_seeds, training)
        # kernels split once per window (the gradient of a split is one
        # concat; a slice per step would give a dense kernel-sized gradient
        # per step)
        # the cells hold the transposes (kernel_t (G, I + P)): the input
        # part is used as it is, only the recurrent part is transposed
        input_kernel_t, recurrent_kernel_t = tf.split(
            tf.stack([tf.convert_to_tensor(c.kernel_t) for c in cells]),
            [cell.input_dim, cell.output_dim], axis=2,
        )  # (D, G, I), (D, G, P)
        recurrent_kernel = tf.transpose(recurrent_kernel_t, (0, 2, 1))
        bias = tf.stack([tf.convert_to_tensor(c.bias) for c in cells])
        bias = bias[:, None, None, :]  # (D, 1, 1, G)
        projection = (
            tf.transpose(tf.stack([
                tf.convert_to_tensor(c.projection_kernel_t) for c in cells
            ]), (0, 2, 1))
            if cell.projection_dim else None
        )  # (D, U, P)
        c = tf.stack([states[layer][0] for states in initial_states])
        h = tf.stack([states[layer][1] for states in initial_states])
        layer_outputs = []
        for (start, stop), x_chunk in zip(chunks, layer_inputs):
            # x_chunk (D, B, K, I) for the chunk's K steps
            x_in = x_chunk if mask is None else (
                x_chunk * mask[:, :, start:stop])
            # input contribution of the chunk's steps: one batched matmul
            z = precision.einsum("dbti,dgi->dbtg", x_in, input_kernel_t,
                                 cell.compute_dtype) + bias
            out, (c, h) = lstm_window(
                z, c, h, recurrent_kernel, projection,
                forget_bias=cell.forget_bias, cell_clip=cell.cell_clip,
                proj_clip=cell.proj_clip,
                keep=None if keep is None else keep[:, :, start:stop],
                fused=fused_gates, compute_dtype=cell.compute_dtype,
            )  # (D, B, K, P)
            # no length mask: every row is full
            layer_outputs.append(
                add_skip(out, x_in, layer, first.use_skip_connections))
        layer_inputs = layer_outputs
        whole = (layer_outputs[0] if len(chunks) == 1
                 else tf.concat(layer_outputs, axis=2))  # (D, B, T, P)
        outputs.append(tf.unstack(whole, num=len(stacks)))
        final_states.append(list(zip(tf.unstack(c, num=len(stacks)),
                                     tf.unstack(h, num=len(stacks)))))
    return [
        ([layer_out[d] for layer_out in outputs],
         [layer_states[d] for layer_states in final_states])
        for d in range(len(stacks))
    ]
