"""A stack of projected LSTM layers for one direction, length-aware: the
layer the backbone holds per direction. Its three ways to run (the while
loop, the inference columns, the unrolled training window) are in
:mod:`bilm_keras.layers.recurrence` (which has the table) and
:mod:`bilm_keras.layers.training_recurrence`."""

import keras
import tensorflow as tf

from bilm_keras._utils.backends import on_tensorflow
from bilm_keras.layers import precision
from bilm_keras.layers.lstm_cell_with_projection import LSTMCellWithProjection
from bilm_keras.layers.recurrence import (
    add_skip,
    from_columns,
    layer_input,
    run_inference_columns,
    run_recurrence,
    run_recurrence_scan,
    time_major_mask,
    to_columns,
)


@keras.saving.register_keras_serializable(package="bilm_keras")
class LSTMStack(keras.layers.Layer):
    """``n_layers`` :class:`LSTMCellWithProjection` layers run in one direction.

    Layer 0 reads the token embeddings. Layer ``l`` reads layer ``l-1``'s
    output. With ``use_skip_connections``, layers above the first add their
    input to their output, as TF1's ``ResidualWrapper``. The recurrent state
    keeps the plain cell output. Dropout, in training only, applies to each
    layer's input, as bilm-tf's ``DropoutWrapper(input_keep_prob)``.

    Args:
        units, projection_dim, cell_clip, proj_clip: of every cell.
        n_layers: int.
        use_skip_connections: bool.
        dropout: float. Input dropout rate in training.

    Call arguments:
        inputs: `(batch, time, input_dim)`.
        lengths: `(batch,)` int. Positions past a row's length give zeros.
        initial_states: list over layers of ``(c, h)``, or None for zeros.
        training: bool.
        dropout_seed: None or a `(2,)` int seed. Layer ``l``'s input mask
            is then drawn from ``fold_seed(dropout_seed, l)``
            (:mod:`bilm_keras.layers.dropout`).
        resets: None or `(batch, time)` float, 1.0 where a row's states,
            every layer's, are zeroed before the step. So the LM starts
            each sentence from zero states in training, as embedding
            does.

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
                units, proj, cell_clip, proj_clip, name=f"cell{i}",
                dtype=self.dtype_policy,
            ))
        precision.float32_io(self)

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
            (keras.ops.zeros((batch_size, cell.units)),
             keras.ops.zeros((batch_size, cell.output_dim)))
            for cell in self.cells
        ]

    def call(self, inputs, lengths, initial_states=None, training=False,
             dropout_seed=None, resets=None):
        # B=batch, T=time, D=input dim, U=units, P=projection dim.
        # The stack runs time-major: the input contributions (the largest
        # tensors, (T, B, 4U)) are computed in the recurrence's layout, so
        # they are never transposed; only the narrow inputs and outputs are.
        x = keras.ops.transpose(inputs, (1, 0, 2))  # (T, B, D)
        if resets is not None:
            resets = keras.ops.transpose(resets)  # (T, B)
        outputs, final_states = self._run_time_major(
            x, lengths, initial_states, training, dropout_seed, resets
        )
        outputs = [keras.ops.transpose(h, (1, 0, 2))
                   for h in outputs]  # (B, T, P)
        return outputs, final_states

    def infer(self, inputs, lengths):
        """Inference only: zero initial states, time-major, no dropout.

        The same values as :meth:`call` (``training=False``) to float
        rounding, through :meth:`infer_columns` (the rows sorted into
        columns here, put back after): no gradients, no final states, the
        faster product layout.

        Args:
            inputs: `(time, batch, input_dim)`.
            lengths: `(batch,)` int32.

        Returns:
            A list of `(time, batch, projection_dim)` per layer, zero past
            each row's length. Only the steps to the longest row are run
            (under TensorFlow; JAX and PyTorch run :meth:`call`'s scan).
        """
        if not on_tensorflow():
            return self._run_time_major(inputs, lengths, None, False)[0]
        # steps past the longest row would each read every kernel for two
        # zero columns: a batch padded wider than its rows runs to the
        # longest row only, and its outputs are padded back with zeros
        width = tf.shape(inputs)[0]
        steps = tf.clip_by_value(tf.reduce_max(lengths), 0, width)
        columns, order, inside = to_columns(inputs[:steps], lengths)
        return [tf.pad(from_columns(h, order), [[0, width - steps], [0, 0],
                                                [0, 0]])
                for h in self.infer_columns(columns, inside)]

    def infer_columns(self, x, inside):
        """:meth:`infer` in the layout of :func:`run_inference_columns`,
        from layer to layer (the bulk embedding path).

        Args:
            x: `(time, input_dim, batch)` a column per row, the rows
                longest first, ``batch >= 2``.
            inside: `(time,)` int32, :func:`columns_inside` of the lengths.

        Returns:
            A list of `(time, projection_dim, batch)` per layer, zero past
            each row's length.
        """
        outputs = []
        for i, cell in enumerate(self.cells):
            h = run_inference_columns(cell, x, inside)
            # a skip adds the layer below's output, zero where h is: no mask
            h = add_skip(h, x, i, self.use_skip_connections)
            outputs.append(h)
            x = h
        return outputs

    def _run_time_major(self, x, lengths, initial_states, training,
                        dropout_seed=None, resets=None):
        """The layers over `(T, B, D)` inputs (``resets`` `(T, B)`):
        outputs `(T, B, P)`, states."""
        if initial_states is None:
            initial_states = self.zero_states(keras.ops.shape(x)[1])
        mask = time_major_mask(lengths, keras.ops.shape(x)[0], x.dtype)
        recurrence = run_recurrence if on_tensorflow() else (
            lambda cell, z, lengths, c0, h0, time_major, resets:
            run_recurrence_scan(cell, z, lengths, c0, h0, resets))
        outputs, final_states = [], []
        for i, (cell, (c0, h0)) in enumerate(zip(self.cells, initial_states)):
            x_in = layer_input(x, i, self.dropout, dropout_seed, training,
                               time_major=True)
            # one large matmul for all time steps, outside the recurrence
            z = cell.input_contribution(x_in)  # (T, B, 4U)
            h, state = recurrence(
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
