"""The recurrences of the biLM's LSTMs, and the helpers every LSTM path
shares (:class:`~bilm_keras.layers.lstm_stack.LSTMStack` runs them).

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
                                   False``,
                                   ``ELMoEmbedding``
                                   fine-tuned in
                                   training
infer       :meth:`LSTMStack.      the bulk embedding   speed: the weights on
            infer_columns` ->      path                 the left of each
            :func:`run_            (``embed_            product, no step spent
            inference_             sentences``),        on padding, rows as
            columns`               ``ELMoEmbedding``    columns from layer to
                                   with a frozen LM     layer; zero states, no
                                   (``fit`` too)        dropout, no gradients
unrolled    :func:`~bilm_keras.    ``LanguageModel``    training speed on
window      layers.training_       (training and        fixed-length windows of
            recurrence.run_        evaluation, by       full rows: a static
            stacks_unrolled` ->    default)             loop, both directions
            ``lstm_window``                             batched, a hand-written
                                                        backward pass
==========  =====================  ===================  ========================

All three run the same cells, with the same variables, and the same gate
math. The while loop and the window call
:func:`~bilm_keras.layers.lstm_cell_with_projection.lstm_step`, the window
with the gate math as an XLA kernel. The inference path writes it out in
its columns layout (:func:`run_inference_columns`). Each layer's input
dropout and skip connection come from :func:`layer_input` and
:func:`add_skip`. The backward direction reads each row reversed within
its length (:func:`reverse_within_lengths`).
``tests/training/test_fast_path.py`` and
``tests/layers/test_lstm_stack_speed_paths.py`` check that the paths
agree.

Those three are TensorFlow's. Under JAX and PyTorch the stack runs
:func:`run_recurrence_scan`, the same step (``lstm_step``, in
``keras.ops``) in ``keras.ops.scan``: ``jax.lax.scan`` under JAX, a
Python loop under PyTorch. TensorFlow keeps its own loops because they
are faster there: the while loop's TensorArray gives a gradient of one
`(batch, 4 * units)` slice a step, and the inference columns run
1.2-1.3x the row layout's products (``bench/RESULTS.md``).
"""


import keras
import tensorflow as tf

from bilm_keras.layers.dropout import dropout, fold_seed


def reverse_within_lengths(x, lengths, time_major=False):
    """Reverses each row's first ``lengths[b]`` positions, the backward
    LM's reading order. The padding past them stays where it is.

    Args:
        x: `(batch, time, ...)`, or `(time, batch, ...)` with
            ``time_major``.
        lengths: `(batch,)` int.
        time_major: layout of ``x``.

    Returns:
        ``x`` reversed within the lengths, same shape and layout.
    """
    ops = keras.ops
    time_axis = 0 if time_major else 1
    steps = ops.arange(ops.shape(x)[time_axis], dtype="int32")  # (T,)
    lengths = ops.cast(lengths, "int32")
    if time_major:
        steps, lengths = steps[:, None], lengths[None, :]  # (T, 1), (1, B)
    else:
        steps, lengths = steps[None, :], lengths[:, None]  # (1, T), (B, 1)
    # position t reads lengths - 1 - t inside the length, t past it
    source = ops.where(steps < lengths, lengths - 1 - steps, steps)
    source = ops.reshape(source, ops.shape(source) + (1,) * (
        len(x.shape) - 2))  # (B, T, 1...) or (T, B, 1...)
    return ops.take_along_axis(x, ops.broadcast_to(source, ops.shape(x)),
                               axis=time_axis)


def layer_input(x, layer, rate, seed=None, training=False,
                time_major=False):
    """Layer ``layer``'s input: ``x`` with input dropout in training.

    This is bilm-tf's ``DropoutWrapper(input_keep_prob)``. Each LSTM
    layer's input is dropped at ``rate``, with the mask drawn from
    ``fold_seed(seed, layer)`` (:func:`~bilm_keras.layers.dropout.dropout`).
    A seed of None draws from TF's stateful generator.

    Args:
        x: `(batch, time, dim)`, or `(time, batch, dim)` with
            ``time_major``.
        layer: int, the layer's index in its stack.
        rate: float, the stack's dropout rate.
        seed: None or the stack's `(2,)` int seed.
        training: bool. No dropout otherwise.
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


def time_major_mask(lengths, n_steps, dtype):
    """`(time, batch, 1)`: 1.0 before each row's length, 0.0 past it."""
    ops = keras.ops
    steps = ops.arange(n_steps, dtype="int32")[:, None]  # (T, 1)
    inside = steps < ops.cast(lengths, "int32")[None, :]  # (T, B)
    return ops.cast(inside, dtype)[:, :, None]  # (T, B, 1)


# The while loop's body: its loop variables and the loop's constants
# as arguments (tf.while_loop passes them so), hence ten.
def _masked_step(cell, z_t, t, c, h, outputs, lengths, w_h, w_p,
                 keep_t=None):
    """Step ``t`` with ``dynamic_rnn``'s length semantics: rows past their
    length keep their state and output zeros.

    ``keep_t`` `(batch, 1)` is 0.0 on rows whose state is zeroed before
    this step, because a sentence starts there, and 1.0 elsewhere. None
    means no reset.

    Returns:
        ``(c, h, outputs)`` with step ``t`` written to the TensorArray.
    """
    if keep_t is not None:
        c, h = c * keep_t, h * keep_t
    c_new, h_new = cell.step(z_t, c, h, w_h, w_p)
    active = t < lengths  # (B, 1)
    c = tf.where(active, c_new, c)
    h = tf.where(active, h_new, h)
    return c, h, outputs.write(t, tf.where(active, h_new, 0.0))


def run_recurrence(cell, z_inputs, lengths, c0, h0, time_major=False,
                   resets=None):
    """Runs ``cell.step`` over time with ``dynamic_rnn``'s length semantics.

    Past a row's length the output is zero and the state is carried
    unchanged. So the final state is the state after the row's last token,
    or the initial state for a row of length 0.

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
    # (P, 4U), (U, P): sliced, transposed and cast to the compute dtype
    # once, not every step
    w_h = tf.cast(cell.recurrent_kernel(), cell.compute_dtype)
    w_p = (tf.cast(cell.projection_kernel, cell.compute_dtype)
           if cell.projection_dim else None)
    keep = None
    if resets is not None:
        resets = resets if time_major else tf.transpose(resets)  # (T, B)
        keep = 1.0 - tf.cast(resets, z_inputs.dtype)[:, :, None]  # (T, B, 1)

    def body(t, c, h, outputs):
        return (t + 1,) + _masked_step(
            cell, read(t), t, c, h, outputs, lengths, w_h, w_p,
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


def run_recurrence_scan(cell, z_inputs, lengths, c0, h0, resets=None):
    """:func:`run_recurrence` (time-major) in ``keras.ops.scan``, for
    every Keras backend: ``jax.lax.scan`` under JAX, a loop under PyTorch.

    The same step (:meth:`LSTMCellWithProjection.step`) and the same
    length semantics: past a row's length the state is carried and the
    output is zero. Gradients are the backend's own.

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        z_inputs: `(time, batch, 4 * units)` input contributions.
        lengths: `(batch,)` int.
        c0, h0: `(batch, units)`, `(batch, output_dim)` initial state.
        resets: None or `(time, batch)` float, 1.0 where a row's state is
            zeroed before the step.

    Returns:
        ``outputs (time, batch, output_dim)``, ``(c, h)``.
    """
    # T=time, B=batch, U=units, P=output dim, G=4U
    ops = keras.ops
    n_steps = ops.shape(z_inputs)[0]
    active = time_major_mask(lengths, n_steps, z_inputs.dtype)  # (T, B, 1)
    keep = (ops.ones_like(active) if resets is None
            else 1.0 - ops.cast(resets, z_inputs.dtype)[:, :, None])
    # (P, G), (U, P): sliced and transposed once, not every step
    w_h = ops.cast(cell.recurrent_kernel(), cell.compute_dtype)
    w_p = (ops.cast(cell.projection_kernel, cell.compute_dtype)
           if cell.projection_dim else None)

    def step(state, inputs):
        c, h = state
        z_t, active_t, keep_t = inputs  # (B, G), (B, 1), (B, 1)
        c, h = c * keep_t, h * keep_t
        c_new, h_new = cell.step(z_t, c, h, w_h, w_p)
        c = active_t * c_new + (1.0 - active_t) * c
        h = active_t * h_new + (1.0 - active_t) * h
        return (c, h), h_new * active_t

    (c, h), outputs = ops.scan(step, (c0, h0), (z_inputs, active, keep))
    return outputs, (c, h)


def columns_inside(lengths, n_steps):
    """`(time,)` int32: how many rows are still inside their length at
    each step (``lengths`` sorted longest first: the first that many
    columns of :func:`run_inference_columns`).

    Args:
        lengths: `(batch,)` int32, steps per row.
        n_steps: int32 scalar, the steps run.
    """
    return tf.reduce_sum(tf.cast(
        lengths[None, :] > tf.range(n_steps)[:, None], tf.int32), axis=1)


def to_columns(x, lengths):
    """Rows ``(time, batch, dim)`` as the columns :func:`run_inference_
    columns` reads: ``(time, dim, batch')``, longest row first, ``batch' =
    max(batch, 2)`` (a batch of one gets a zero column).

    Returns:
        ``(columns, order, inside)``: the columns, the rows' order
        (`(batch,)`: column ``k`` is row ``order[k]``) and
        :func:`columns_inside` of the sorted lengths.
    """
    lengths = tf.cast(lengths, tf.int32)
    batch = tf.shape(x)[1]
    order = tf.argsort(lengths, direction="DESCENDING", stable=True)
    columns = tf.transpose(tf.gather(x, order, axis=1), (0, 2, 1))
    columns = tf.pad(columns, [[0, 0], [0, 0], [0, tf.maximum(2 - batch, 0)]])
    inside = columns_inside(tf.gather(lengths, order), tf.shape(x)[0])
    return columns, order, inside


def from_columns(h, order):
    """:func:`to_columns` undone: `(time, dim, batch')` -> `(time, batch,
    dim)` in the rows' given order."""
    batch = tf.shape(order)[0]
    h = tf.transpose(h[:, :, :batch], (0, 2, 1))  # (T, B, P), sorted
    return tf.gather(h, tf.math.invert_permutation(order), axis=1)


def run_inference_columns(cell, x, inside):
    """Inference only: :func:`run_recurrence` from zero states, outputs
    only, with the weights on the left of every product and no step spent
    on padding.

    Each step is ``z = kernel_t @ [x_t; h] + b`` `(4U, n)` and
    ``h = projection_kernel_t @ m`` `(P, n)` over the ``n`` rows still
    inside their length. The rows are columns, longest first. So those are
    the first ``n`` columns, and the state simply loses its last columns
    as rows end.

    With the batch as the narrow dimension, a CPU runs the product near its
    square-matmul speed, where ``[x, h] @ kernel`` with 64-128 rows does
    not. Besides:

    * the input and recurrent parts are one product, with no
      input-contribution buffer.
    * each gate is a block of rows, with no copy to split them.
    * padding costs nothing, so a compute batch may mix lengths.
    * the outputs past a row's length are written as zeros, so nothing
      masks them after.

    The layout stays columns from layer to layer
    (:meth:`LSTMStack.infer_columns`), with no transpose or reordering
    between layers. The arithmetic is that of :func:`run_recurrence` to
    float rounding: ``i, j, f, o`` from ``[x, h] @ kernel + b``, ``f`` plus
    the forget bias. The bias, the forget bias in it, is added after the
    whole product, as bilm-tf did. No gradients, no final state.

    Under a mixed policy, the cell's ``compute_dtype``
    (:mod:`~bilm_keras.layers.precision`), the kernels are cast once. Each
    step's two products take their operands in that dtype. ``z``, the
    gates, the cell state and the outputs stay float32.

    At least two columns are always computed. The second is a row that has
    ended, or the zero column :func:`to_columns` adds to a batch of one. A
    one-column product is a matrix-vector product, whose rounding differs
    from the matrix product's. Otherwise a sentence's last steps would
    round depending on what it was batched with.

    Args:
        cell: a built :class:`LSTMCellWithProjection`.
        x: `(time, input_dim, batch)` the layer's inputs, a column per
            row, the rows longest first, ``batch >= 2``.
        inside: `(time,)` int32, :func:`columns_inside` of the rows'
            lengths: the columns computed at each step.

    Returns:
        `(time, output_dim, batch)` outputs, zero past each row's length.
    """
    # T=time, D=input dim, B=batch, U=units, P=output dim, G=4U
    n_steps, columns = tf.shape(x)[0], tf.shape(x)[2]
    units, output_dim = cell.units, cell.output_dim
    active = tf.maximum(inside, 2)  # (T,)
    dtype = cell.compute_dtype  # of the products
    # a reduced precision's copies of the kernels are made once the layer's
    # input is there: one layer's copies alive at a time, not every
    # layer's at the graph's start (float32 makes none)
    with tf.control_dependencies([] if dtype == "float32" else [x]):
        kernel_t = tf.cast(cell.kernel_t, dtype)  # (G, D + P)
        projection_t = (tf.cast(cell.projection_kernel_t, dtype)
                        if cell.projection_dim else None)  # (P, U)
    x_in = tf.cast(x, dtype)  # (T, D, B), the products' operand
    bias = tf.convert_to_tensor(cell.bias)
    bias = tf.concat([bias[: 2 * units],
                      bias[2 * units: 3 * units] + cell.forget_bias,
                      bias[3 * units:]], 0)[:, None]  # (G, 1)

    def step(t, c, h, outputs):
        # c (U, n'), h (P, n'): the previous step's columns, n' >= n
        n = active[t]
        c, h = c[:, :n], h[:, :n]
        z = tf.cast(tf.matmul(kernel_t, tf.concat(
            [x_in[t, :, :n], tf.cast(h, dtype)], 0)), tf.float32)
        # (4, U, n): a gate is a block of U * n floats, a slice that shares
        # the buffer whatever n (slicing z's rows would copy unless n is a
        # multiple of 16)
        z = tf.reshape(z + bias, (4, units, n))
        i, j = tf.sigmoid(z[0]), tf.tanh(z[1])
        f, o = tf.unstack(tf.sigmoid(z[2:]))  # f with the forget bias
        c = f * c + i * j  # (U, n)
        if cell.cell_clip:
            c = tf.clip_by_value(c, -cell.cell_clip, cell.cell_clip)
        m = o * tf.tanh(c)
        h = m if projection_t is None else tf.cast(tf.matmul(
            projection_t, tf.cast(m, dtype)), tf.float32)
        if cell.proj_clip:
            h = tf.clip_by_value(h, -cell.proj_clip, cell.proj_clip)
        # the output: zero for the rows past their length (a second column
        # kept for the product included), so no mask is needed after
        out = h[:, :inside[t]]  # (P, n), or fewer columns
        return t + 1, c, h, outputs.write(
            t, tf.pad(out, [[0, 0], [0, columns - inside[t]]]))

    _, _, _, outputs = tf.while_loop(
        lambda t, *_: t < n_steps, step,
        (tf.constant(0), tf.zeros((units, columns), x.dtype),
         tf.zeros((output_dim, columns), x.dtype),
         tf.TensorArray(x.dtype, size=n_steps,
                        element_shape=(output_dim, None))),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([units, None]),
                          tf.TensorShape([output_dim, None]),
                          tf.TensorShape(None)),
    )
    return tf.ensure_shape(outputs.stack(), [None, output_dim, None])
