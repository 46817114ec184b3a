"""TokenCache: a frozen char-CNN's token vectors kept across training steps.

With the biLM frozen, a token's vector from the char-CNN and highway
layers is a function of its character ids alone. A tagger's epochs meet
the same tokens again and again, so :class:`~bilm_keras.keras_layer.
elmo_embedding.ELMoEmbedding` keeps each distinct token's vector here in
its training calls and computes only the tokens it has not met. The
vectors are those the char-CNN gives, so the layer's outputs do not
change. ``bench/keras_fit.py`` measures what it saves.
"""

from __future__ import annotations

import tensorflow as tf

#: distinct tokens kept by default: 200 MB of vectors for the published
#: model's 512 floats a token
TOKEN_CACHE_SIZE = 100_000
#: the key under which the table keeps the checksum of the weights its
#: vectors came from. A token's key is its ids as digits and spaces.
_CHECKSUM_KEY = "#weights"
#: rows of each weight that the checksum reads: a load or a training
#: update changes every row, and reading all of the highways' would cost
#: more than the lookups save
_CHECKSUM_ROWS = 16


class TokenCache:
    """Token vectors by their ids, at most ``size`` tokens, emptied when
    the weights they came from change.

    The table is a TensorFlow resource outside Keras' tracking: neither a
    ``.keras`` file nor ``model.export`` holds it.

    Args:
        size: int >= 1. Distinct tokens kept, the first met. Tokens past
            it are computed at every call.
        dim: int. A token vector's size, the model's projection dim.
    """

    def __init__(self, size: int, dim: int):
        self.size = size
        self.dim = dim
        # NaN marks a miss: a char-CNN's vector never is one
        self.table = tf.lookup.experimental.MutableHashTable(
            key_dtype=tf.string, value_dtype=tf.float32,
            default_value=tf.fill([dim], float("nan")))

    def vectors(self, ids, compute, weights):
        """The vectors of ``ids``, from the table where it has them.

        Args:
            ids: `(tokens, ids_width)` int32, distinct tokens' ids.
            compute: a function of `(n, ids_width)` ids to their `(n, dim)`
                float32 vectors, called on the tokens not kept.
            weights: the variables the vectors depend on. A change in them
                empties the table first.

        Returns:
            `(tokens, dim)` float32.
        """
        self._forget_if_changed(weights)
        keys = tf.strings.reduce_join(tf.strings.as_string(ids), axis=-1,
                                      separator=" ")  # (N,)
        found = self.table.lookup(keys)  # (N, dim)
        missing = tf.where(tf.math.is_nan(found[:, 0]))  # (M, 1)
        # all known: no call, a char-CNN cannot run on zero tokens
        computed = tf.cond(
            tf.size(missing) > 0,
            lambda: compute(tf.gather_nd(ids, missing)),
            lambda: tf.zeros((0, self.dim)))  # (M, dim)
        room = tf.maximum(self.size + 1 - self.table.size(), 0)
        kept = tf.minimum(tf.cast(room, tf.int32), tf.shape(missing)[0])
        insert = self.table.insert(tf.gather_nd(keys, missing)[:kept],
                                   computed[:kept])
        with tf.control_dependencies([insert]):
            return tf.tensor_scatter_nd_update(found, missing, computed)

    def _forget_if_changed(self, weights) -> None:
        """Empties the table when ``weights`` are not those its vectors
        came from, then records theirs."""
        checksum = tf.add_n([
            (i + 1.0) * tf.reduce_sum(tf.cast(w[:_CHECKSUM_ROWS], tf.float32))
            for i, w in enumerate(weights)])
        key = tf.constant([_CHECKSUM_KEY])
        stored = self.table.lookup(key)[0, 0]

        def forget():
            keys, _ = self.table.export()
            with tf.control_dependencies([self.table.remove(keys)]):
                insert = self.table.insert(
                    key, tf.fill([1, self.dim], checksum))
            with tf.control_dependencies([insert]):
                return tf.constant(True)

        # NaN when nothing is recorded yet: not equal, so recorded
        tf.cond(tf.equal(stored, checksum), lambda: tf.constant(False),
                forget)
