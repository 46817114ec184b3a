"""ScalarMix: ELMo's learned, softmax-normalised mix of the biLM layers."""

import keras

from bilm_keras.layers import precision


@keras.saving.register_keras_serializable(package="bilm_keras")
class ScalarMix(keras.layers.Layer):
    """``gamma * sum_l softmax(w + 1/L)_l * f(layer_l)``, as bilm-tf's
    ``weight_layers``.

    ``f`` is the identity, or with ``do_layer_norm`` a normalisation of each
    layer by one mean and variance over all unmasked positions and features
    of the batch (bilm-tf's ``_do_ln``, epsilon 1e-12). With
    ``use_top_only`` the result is ``gamma * layer_top`` and ``w`` does not
    exist.

    Args:
        n_layers: L, the biLM layers mixed (``n_lstm_layers + 1``).
        l2_coef: float or None. ``l2_coef * sum(w**2)`` is added to the
            layer's losses.
        use_top_only: bool.
        do_layer_norm: bool.

    Call arguments:
        lm_embeddings: `(batch, n_layers, time, dim)`.
        mask: `(batch, time)` bool.

    Returns:
        `(batch, time, dim)`.

    Example:
        >>> mix = ScalarMix(3)
        >>> tuple(mix(keras.ops.ones((2, 3, 5, 4)),
        ...            keras.ops.ones((2, 5), "bool")).shape)
        (2, 5, 4)

    Reference:
        Peters et al., "Deep contextualized word representations", 2018,
        eq. (1).
    """

    def __init__(self, n_layers, l2_coef=None, use_top_only=False,
                 do_layer_norm=False, **kwargs):
        super().__init__(**kwargs)
        # float32 under any policy (no product worth a lower precision
        # here): bilm_keras.layers.precision
        precision.float32_io(self)
        self.n_layers = n_layers
        self.l2_coef = l2_coef
        self.use_top_only = use_top_only
        self.do_layer_norm = do_layer_norm

    def build(self, lm_embeddings_shape=None, mask_shape=None):
        if not self.use_top_only:
            self.scalar_weights = self.add_weight(
                autocast=False,
                name="scalar_weights",
                shape=(self.n_layers,),
                initializer="zeros",
                regularizer=(
                    keras.regularizers.L2(self.l2_coef)
                    if self.l2_coef else None
                ),
            )
        self.gamma = self.add_weight(
            autocast=False,
            name="gamma", shape=(1,), initializer="ones"
        )

    def normalized_weights(self):
        """`(n_layers,)` softmax(w + 1/L)."""
        return keras.ops.softmax(self.scalar_weights + 1.0 / self.n_layers)

    def mix_arguments(self) -> dict:
        """This trained mix as ``embed_sentences``' arguments, to cache
        its output per token.

        ``embed_sentences(..., output="mix", **mix.mix_arguments())`` gives,
        for each sentence, what this layer gives on its layers.

        Returns:
            ``{"mix_logits": [w_0, ...], "gamma": g}``, the raw weights,
            normalised there as here. With ``use_top_only``,
            ``{"mix_weights": [0, ..., 0, 1], "gamma": g}``.

        Raises:
            ValueError: ``do_layer_norm``. That normalisation takes one mean
                and variance over a whole batch. So a sentence's vectors
                depend on the sentences beside it, and cannot be cached one
                sentence at a time.
        """
        if self.do_layer_norm:
            raise ValueError(
                f"{self.name}: do_layer_norm=True normalises by statistics "
                "of the whole batch; expected a mix without it (a "
                "sentence's cached vectors cannot depend on its batch)")
        if not self.built:
            raise ValueError(f"{self.name}: expected a built (trained) "
                             "ScalarMix, found it unbuilt")
        gamma = float(keras.ops.convert_to_numpy(self.gamma)[0])
        if self.use_top_only:
            weights = [0.0] * (self.n_layers - 1) + [1.0]
            return {"mix_weights": weights, "gamma": gamma}
        logits = keras.ops.convert_to_numpy(self.scalar_weights)
        return {"mix_logits": [float(w) for w in logits], "gamma": gamma}

    def regularization(self):
        """The scalar ``l2_coef * sum(w**2)`` (0.0 without l2 or weights)."""
        if self.use_top_only or not self.l2_coef:
            return keras.ops.convert_to_tensor(0.0)
        return self.l2_coef * keras.ops.sum(
            keras.ops.square(self.scalar_weights))

    def call(self, lm_embeddings, mask):
        # B=batch, L=layers, T=time, D=dim
        if self.use_top_only:
            return lm_embeddings[:, -1] * self.gamma
        ops = keras.ops
        mask_f = ops.cast(mask, lm_embeddings.dtype)[:, :, None]  # (B, T, 1)
        dim = ops.cast(ops.shape(lm_embeddings)[-1], lm_embeddings.dtype)
        n = ops.sum(mask_f) * dim
        weights = self.normalized_weights()
        mixed = 0.0
        for layer in range(self.n_layers):
            x = lm_embeddings[:, layer]  # (B, T, D)
            if self.do_layer_norm:
                x_masked = x * mask_f
                mean = ops.sum(x_masked) / n
                var = ops.sum(((x_masked - mean) * mask_f) ** 2) / n
                # tf.nn.batch_normalization's arithmetic, to its rounding
                inv = ops.rsqrt(var + 1e-12)
                x = x * inv + (-mean * inv)
            mixed += weights[layer] * x
        return mixed * self.gamma

    def compute_output_shape(self, lm_embeddings_shape, mask_shape=None):
        shape = lm_embeddings_shape
        return (shape[0], shape[2], shape[3])

    def get_config(self):
        config = super().get_config()
        config.update(
            n_layers=self.n_layers,
            l2_coef=self.l2_coef,
            use_top_only=self.use_top_only,
            do_layer_norm=self.do_layer_norm,
        )
        return config
