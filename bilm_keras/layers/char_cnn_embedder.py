"""Character-CNN token embedder: chars -> convolutions -> highway -> proj
(with ELMoForManyLangs' optional word embedding before the projection)."""

import keras

from bilm_keras.layers import precision
from bilm_keras.layers.highway import Highway
from bilm_keras.layers.initialization import initial


@keras.saving.register_keras_serializable(package="bilm_keras")
class CharCNNEmbedder(keras.layers.Layer):
    """Embeds each token from its character ids, as bilm-tf's char-CNN.

    For every filter ``(width, num)``: a 1-D convolution over the token's
    characters (VALID), max-pooling over positions, then the activation.
    The pooled features of all filters are concatenated, passed through
    ``n_highway`` :class:`Highway` layers and projected to
    ``projection_dim`` when the filter count differs from it.

    The character table has ``n_characters`` rows. Row 0 is the padding
    id of :class:`~bilm_keras.Batcher` (+1-shifted ids) and stays zero when
    loaded from bilm-tf weights.

    A converted ELMoForManyLangs model (``word_embedding_dim > 0``) also
    has a word embedding. Each token's ids end with one more column, its
    word id, +1-shifted, from
    :class:`~bilm_keras.data.manylangs_batcher.ManyLangsBatcher`. Its
    embedding is concatenated *before* the highway output,
    ``[word ; chars]``, and projected with bias to ``projection_dim``.
    Upstream always projects, so such a model has ``always_project``.

    Args:
        filters: list of ``(width, num)``.
        char_embedding_dim: size of a character embedding.
        n_highway: number of highway layers.
        projection_dim: output size.
        activation: ``"relu"`` or ``"tanh"``.
        n_characters: rows of the character table, 262 for 261 and the
            padding.
        max_characters_per_token: characters per token, the input's last
            axis without a word part.
        word_embedding_dim: size of a word embedding. 0, the default, is no
            word part, as in bilm-tf.
        n_words: words of the word table without its padding row. The
            table has ``n_words + 1`` rows, row 0 the padding id.
        always_project: project even when the filter count equals
            ``projection_dim``, as ELMoForManyLangs does. A word part
            implies it.

    Call arguments:
        inputs: `(batch, time, W)` int ids: the char ids
            (``W = max_characters_per_token``), then the word id when
            there is a word part (``W = max_characters_per_token + 1``).

    Returns:
        `(batch, time, projection_dim)` float32 token embeddings. Under a
        mixed policy the convolutions and products run in its compute
        dtype, the rest in float32 (:mod:`~bilm_keras.layers.precision`).

    Example:
        >>> emb = CharCNNEmbedder([(1, 4), (2, 8)], 4, 1, 8)
        >>> tuple(emb(keras.ops.ones((2, 3, 50), "int32")).shape)
        (2, 3, 8)
    """

    # Many arguments, not an options value, by design: a Keras layer's
    # config is its constructor's arguments (see BiLMBackbone).
    def __init__(
        self,
        filters,
        char_embedding_dim,
        n_highway,
        projection_dim,
        activation="relu",
        n_characters=262,
        max_characters_per_token=50,
        word_embedding_dim=0,
        n_words=0,
        always_project=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters = [tuple(int(v) for v in f) for f in filters]
        self.char_embedding_dim = char_embedding_dim
        self.n_highway = n_highway
        self.projection_dim = projection_dim
        self.activation = activation
        self.n_characters = n_characters
        self.max_characters_per_token = max_characters_per_token
        self.word_embedding_dim = word_embedding_dim
        self.n_words = n_words
        self.always_project = always_project
        precision.float32_io(self)
        if word_embedding_dim and n_words < 1:
            raise ValueError(f"n_words: expected a positive integer with a "
                             f"word part, found {n_words!r}")
        self._activation_fn = {"relu": keras.ops.relu,
                               "tanh": keras.ops.tanh}[activation]
        self.n_filters = sum(num for _, num in self.filters)
        # Sublayers and variables are single attributes, not lists:
        # tf.train.Checkpoint and SavedModel do not see into Keras 3 lists.
        for i in range(n_highway):
            setattr(self, f"highway_{i}", Highway(
                name=f"highway_{i}", dtype=self.dtype_policy))
        self.use_projection = (always_project or word_embedding_dim > 0
                               or self.n_filters != projection_dim)

    @property
    def has_word_part(self) -> bool:
        return self.word_embedding_dim > 0

    @property
    def ids_width(self) -> int:
        """Ids per token (the input's last axis): chars (+ the word id)."""
        return self.max_characters_per_token + int(self.has_word_part)

    @property
    def highways(self):
        return [getattr(self, f"highway_{i}") for i in range(self.n_highway)]

    @property
    def conv_kernels(self):
        """Per filter: `(width, char_embedding_dim, num)`."""
        return [getattr(self, f"conv_{i}_kernel")
                for i in range(len(self.filters))]

    @property
    def conv_biases(self):
        return [getattr(self, f"conv_{i}_bias")
                for i in range(len(self.filters))]

    def build(self, input_shape=None):
        self.char_embedding = self.add_weight(
            autocast=False,
            name="char_embedding",
            shape=(self.n_characters, self.char_embedding_dim),
            initializer=initial(keras.initializers.RandomUniform(-1.0, 1.0)),
        )
        for i, (width, num) in enumerate(self.filters):
            if self.activation == "relu":
                init = keras.initializers.RandomUniform(-0.05, 0.05)
            else:
                std = (1.0 / (width * self.char_embedding_dim)) ** 0.5
                init = keras.initializers.RandomNormal(stddev=std)
            setattr(self, f"conv_{i}_kernel", self.add_weight(
                autocast=False,
                name=f"conv_{i}_kernel",
                shape=(width, self.char_embedding_dim, num),
                initializer=initial(init),
            ))
            setattr(self, f"conv_{i}_bias", self.add_weight(
                autocast=False,
                name=f"conv_{i}_bias", shape=(num,), initializer="zeros"
            ))
        for highway in self.highways:
            highway.build((None, self.n_filters))
        if self.has_word_part:
            # row 0: the padding id of the +1-shifted word ids
            self.word_embedding = self.add_weight(
                autocast=False,
                name="word_embedding",
                shape=(self.n_words + 1, self.word_embedding_dim),
                initializer=initial(
                    keras.initializers.RandomUniform(-1.0, 1.0)),
            )
        if self.use_projection:
            n_in = self.word_embedding_dim + self.n_filters  # [word ; chars]
            self.projection_kernel = self.add_weight(
                autocast=False,
                name="projection_kernel",
                shape=(n_in, self.projection_dim),
                initializer=initial(keras.initializers.RandomNormal(
                    stddev=(1.0 / n_in) ** 0.5
                )),
            )
            self.projection_bias = self.add_weight(
                autocast=False,
                name="projection_bias",
                shape=(self.projection_dim,),
                initializer="zeros",
            )

    def call(self, inputs):
        # B=batch, T=time, C=max chars, E=char embedding, F=total filters,
        # W=ids per token (C, or C + 1 with the word id), D=word embedding
        ops = keras.ops
        ids = ops.cast(inputs, "int32")
        batch, time = ops.shape(ids)[:2]
        ids = ops.reshape(ids, (-1, self.ids_width))  # (B*T, W)
        if self.has_word_part:
            word_ids = ids[:, self.max_characters_per_token]  # (B*T,)
            ids = ids[:, : self.max_characters_per_token]  # (B*T, C)
        dtype = self.compute_dtype
        chars = ops.take(ops.cast(self.char_embedding, dtype), ids,
                         axis=0)  # (B*T, C, E)
        pooled = []
        for kernel, bias in zip(self.conv_kernels, self.conv_biases):
            conv = ops.conv(chars, ops.cast(kernel, dtype), 1,
                            "valid")
            # (B*T, C - width + 1, num) -> max over positions -> (B*T, num);
            # the bias after the max: max(x + b) is max(x) + b exactly in
            # floats (rounding x + b keeps the order), and the add and its
            # gradient's sum then cover B*T rows, not B*T * (C - width + 1);
            # the max before the cast to float32 (the same value: a cast
            # keeps the order), so only B*T rows are cast
            pooled.append(self._activation_fn(
                ops.cast(ops.max(conv, axis=1), "float32") + bias))
        x = ops.concatenate(pooled, axis=-1)  # (B*T, F)
        for highway in self.highways:
            x = highway(x)
        if self.has_word_part:
            words = ops.take(self.word_embedding, word_ids,
                             axis=0)  # (B*T, D)
            x = ops.concatenate([words, x], axis=-1)  # (B*T, D + F)
        if self.use_projection:
            x = (precision.matmul(x, self.projection_kernel, dtype)
                 + self.projection_bias)
        return ops.reshape(x, (batch, time, self.projection_dim))  # (B, T, P)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.projection_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            filters=[list(f) for f in self.filters],
            char_embedding_dim=self.char_embedding_dim,
            n_highway=self.n_highway,
            projection_dim=self.projection_dim,
            activation=self.activation,
            n_characters=self.n_characters,
            max_characters_per_token=self.max_characters_per_token,
            word_embedding_dim=self.word_embedding_dim,
            n_words=self.n_words,
            always_project=self.always_project,
        )
        return config
