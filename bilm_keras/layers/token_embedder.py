"""Token-id embedder for token-input biLMs."""

import keras
import tensorflow as tf

from bilm_keras._utils.backends import on_tensorflow

from bilm_keras.layers import precision
from bilm_keras.layers.initialization import initial


@keras.saving.register_keras_serializable(package="bilm_keras")
class TokenEmbedder(keras.layers.Layer):
    """A lookup table indexed by +1-shifted token ids (0 is padding).

    bilm-tf's token-input models keep a ``(n_tokens_vocab, dim)`` table.
    With the padding row, row 0, this layer holds
    ``(n_tokens_vocab + 1, dim)``.

    Args:
        n_tokens_vocab: tokens in the vocabulary (the padding row is
            added).
        embedding_dim: size of a token embedding.

    Call arguments:
        inputs: `(batch, time)` int token ids from ``TokenBatcher``.

    Returns:
        `(batch, time, embedding_dim)` float32.
    """

    def __init__(self, n_tokens_vocab, embedding_dim, **kwargs):
        super().__init__(**kwargs)
        # float32 under any policy (no product worth a lower precision
        # here): bilm_keras.layers.precision
        precision.float32_io(self)
        self.n_tokens_vocab = n_tokens_vocab
        self.embedding_dim = embedding_dim

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            autocast=False,
            name="embeddings",
            shape=(self.n_tokens_vocab + 1, self.embedding_dim),
            initializer=initial(keras.initializers.RandomNormal(stddev=1.0)),
        )

    def call(self, inputs):
        if not on_tensorflow():
            return keras.ops.take(self.embeddings,
                                  keras.ops.cast(inputs, "int32"), axis=0)
        # the tf.Variable itself: gather its rows (ResourceGather), not a
        # read of the whole table (a copy of it after a sparse update)
        return tf.gather(self.embeddings.value, tf.cast(inputs, tf.int32))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.embedding_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            n_tokens_vocab=self.n_tokens_vocab,
            embedding_dim=self.embedding_dim,
        )
        return config
