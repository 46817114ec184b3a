"""Softmax over the vocabulary: sampled in training, full for evaluation."""

import keras
import tensorflow as tf

from bilm_keras.layers.initialization import initial


@keras.saving.register_keras_serializable(package="bilm_keras")
class SampledSoftmaxLoss(keras.layers.Layer):
    """Per-token next-token loss, as bilm-tf's ``LanguageModel`` computes it.

    In training it is ``tf.nn.sampled_softmax_loss`` with
    ``n_negative_samples`` classes drawn by the log-uniform (Zipfian)
    sampler, bilm-tf's choice: the vocabulary file is sorted by descending
    count, so low ids are frequent. In evaluation it is the full softmax
    cross-entropy. When ``n_negative_samples >= n_tokens_vocab`` the full
    softmax is used in training too (sampling every class only adds noise).

    The weights keep bilm-tf's layout: ``softmax/W (n_tokens_vocab, dim)``
    and ``softmax/b (n_tokens_vocab,)``. With ``share_weights=True`` the
    layer owns only the bias; the caller passes the shared
    ``(n_tokens_vocab, dim)`` matrix (the token embedding table without its
    padding row).

    Args:
        n_tokens_vocab: int. Number of target classes (vocabulary size).
        dim: int. Size of the hidden states scored against ``W``.
        n_negative_samples: int. Sampled classes per batch in training.
        share_weights: bool. Take ``W`` from the caller at call time.
        seed: int or None. Op seed of the candidate sampler.

    Call arguments:
        inputs: `(batch, time, dim)` hidden states.
        targets: `(batch, time)` int target ids in ``[0, n_tokens_vocab)``.
        training: bool. Sampled (True) or full (False) softmax.
        softmax_weights: `(n_tokens_vocab, dim)`, required iff
            ``share_weights``.

    Returns:
        `(batch, time)` float32 negative log-likelihoods (unmasked).

    Example:
        >>> loss = SampledSoftmaxLoss(n_tokens_vocab=10, dim=4,
        ...                           n_negative_samples=3)
        >>> loss(tf.ones((2, 5, 4)), tf.zeros((2, 5), tf.int32)).shape
        TensorShape([2, 5])

    Reference:
        Jean, Cho, Memisevic, Bengio, "On Using Very Large Target Vocabulary
        for Neural Machine Translation", 2015.
    """

    def __init__(
        self,
        n_tokens_vocab,
        dim,
        n_negative_samples=8192,
        share_weights=False,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.n_tokens_vocab = n_tokens_vocab
        self.dim = dim
        self.n_negative_samples = n_negative_samples
        self.share_weights = share_weights
        self.seed = seed

    @property
    def samples(self) -> bool:
        """Whether training uses the sampled (not the full) softmax."""
        return self.n_negative_samples < self.n_tokens_vocab

    @property
    def weight_stddev(self) -> float:
        """``W`` starts as normal(0, ``weight_stddev``): bilm-tf's
        1 / sqrt(dim), "Glorot-like" for a softmax."""
        return 1.0 / self.dim**0.5

    def build(self, input_shape=None):
        if not self.share_weights:
            self.W = self.add_weight(
                name="W",
                shape=(self.n_tokens_vocab, self.dim),
                initializer=initial(keras.initializers.RandomNormal(
                    stddev=self.weight_stddev
                )),
            )
        self.b = self.add_weight(
            name="b", shape=(self.n_tokens_vocab,), initializer="zeros"
        )

    def call(self, inputs, targets, training=False, softmax_weights=None):
        if self.share_weights:
            if softmax_weights is None:
                raise ValueError(
                    "SampledSoftmaxLoss(share_weights=True) needs "
                    "softmax_weights at call time"
                )
            weights = softmax_weights
        else:
            # the tf.Variable itself: the sampled softmax then gathers its
            # rows (ResourceGather) instead of reading the whole (V, D)
            # table, which after a sparse update means copying it
            weights = self.W.value
        # B=batch, T=time, D=dim, N=B*T, V=n_tokens_vocab, K=n_negative_samples
        batch_time = tf.shape(targets)
        x = tf.reshape(inputs, (-1, self.dim))  # (N, D)
        labels = tf.reshape(tf.cast(targets, tf.int64), (-1, 1))  # (N, 1)
        if training and self.samples:
            losses = tf.nn.sampled_softmax_loss(
                weights=weights,
                biases=self.b.value,
                labels=labels,
                inputs=x,
                num_sampled=self.n_negative_samples,
                num_classes=self.n_tokens_vocab,
                num_true=1,
                seed=self.seed,
            )  # (N,)
        else:
            logits = tf.matmul(x, weights, transpose_b=True) + self.b  # (N, V)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels[:, 0], logits=logits
            )  # (N,)
        return tf.reshape(losses, batch_time)  # (B, T)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2])

    def get_config(self):
        config = super().get_config()
        config.update(
            n_tokens_vocab=self.n_tokens_vocab,
            dim=self.dim,
            n_negative_samples=self.n_negative_samples,
            share_weights=self.share_weights,
            seed=self.seed,
        )
        return config
