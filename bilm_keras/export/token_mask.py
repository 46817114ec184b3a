"""TokenMask: the Keras mask of a string input's embedding."""

import keras
import tensorflow as tf

from bilm_keras.export.graph_char_ids import split_sentences


@keras.saving.register_keras_serializable(package="bilm_keras")
class TokenMask(keras.layers.Layer):
    """`(batch, time)` bool: which positions of a string input's embedding
    hold a token, the mask of :class:`ELMoEmbedding` and
    :class:`~bilm_keras.export.ELMoHubLayer`.

    Call arguments:
        inputs: `(batch,)` tf.string sentences, split as ``str.split()``,
            or `(batch, time)` tokens padded at the end with ``""``.
        lengths: None, or `(batch,)` int tokens per row of padded tokens
            (google/elmo/3's ``sequence_len``), read instead of the
            padding.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_jit = False  # string ops

    def call(self, inputs, lengths=None):
        if inputs.shape.rank == 1:
            return tf.sequence_mask(split_sentences(inputs).row_lengths())
        if lengths is None:
            lengths = tf.RaggedTensor.from_tensor(
                inputs, padding="").row_lengths()
        return tf.sequence_mask(lengths, tf.shape(inputs)[1])

    def compute_output_shape(self, input_shape, lengths_shape=None):
        if len(input_shape) == 1:
            return (input_shape[0], None)
        return tuple(input_shape)

    def compute_output_spec(self, inputs, lengths=None):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape),
                                 dtype="bool")
