"""Softmax over the vocabulary: sampled in training, full for evaluation."""

import math

import keras
import tensorflow as tf

from bilm_keras.layers import precision
from bilm_keras.layers.dropout import fold_seed
from bilm_keras.layers.initialization import initial


def stateless_log_uniform_candidates(true_classes, num_sampled, range_max,
                                     seed):
    """``tf.random.log_uniform_candidate_sampler(unique=True)``'s draw as a
    stateless function of ``seed``.

    TensorFlow's sampler keeps its random state inside the op. A process
    that restarts from a checkpoint draws the first samples again, not the
    ones an uninterrupted run draws next. Here the draw is a function of
    the seed the training step passes, with its step and replica folded
    in. So a resumed run samples exactly what the uninterrupted one does.

    The distribution and the expected counts are TensorFlow's
    (``LogUniformSampler``, ``ExpectedCountHelper``). Tries are drawn as
    ``floor(exp(u * log(range_max + 1))) - 1``, with ``u`` uniform in
    ``[0, 1)``, until ``num_sampled`` distinct classes are found. Class
    ``c`` has probability ``log((c + 2) / (c + 1)) / log(range_max + 1)``.
    Its expected count after ``n`` tries is ``1 - (1 - p) ** n``, or
    ``p * num_sampled`` when no try was a repeat.

    Args:
        true_classes: `(N, 1)` int64 target classes.
        num_sampled: int, the distinct classes to draw (< ``range_max``).
        range_max: int, the classes ``[0, range_max)``.
        seed: a `(2,)` int stateless seed.

    Returns:
        ``(sampled (num_sampled,) int64, true_expected_count (N, 1)
        float32, sampled_expected_count (num_sampled,) float32)``, the
        ``sampled_values`` of ``tf.nn.sampled_softmax_loss``.
    """
    log_range = math.log(range_max + 1.0)
    block = max(2 * num_sampled, 64)  # tries drawn at a time

    def draw(i):
        u = tf.random.stateless_uniform([block], seed=fold_seed(seed, i),
                                        dtype=tf.float64)
        tries = tf.cast(tf.exp(u * log_range), tf.int64) - 1
        return tries % range_max  # (block,)

    def n_distinct(tries):
        return tf.size(tf.unique(tries).y)

    _, tries = tf.while_loop(
        lambda i, tries: n_distinct(tries) < num_sampled,
        lambda i, tries: (i + 1, tf.concat([tries, draw(i)], 0)),
        (tf.constant(1), draw(0)),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
    distinct, first_of = tf.unique(tries)  # in the order first drawn
    sampled = distinct[:num_sampled]  # (K,)
    # tries until the K-th distinct class: its first position + 1 (argmax
    # gives the first of equal maxima; unsorted_segment_min over the tries
    # met a stale static length in graph mode once the loop ran twice)
    first_try = tf.argmax(tf.cast(tf.equal(first_of, num_sampled - 1),
                                  tf.int32), output_type=tf.int32)
    n_tries = tf.cast(first_try + 1, tf.float64)

    def expected_count(classes):
        c = tf.cast(classes, tf.float64)
        p = tf.math.log((c + 2.0) / (c + 1.0)) / log_range
        counts = tf.where(
            n_tries == num_sampled, p * num_sampled,
            -tf.math.expm1(n_tries * tf.math.log1p(-p)))
        return tf.cast(counts, tf.float32)

    return sampled, expected_count(true_classes), expected_count(sampled)


@keras.saving.register_keras_serializable(package="bilm_keras")
class SampledSoftmaxLoss(keras.layers.Layer):
    """Per-token next-token loss, as bilm-tf's ``LanguageModel`` computes it.

    In training it is ``tf.nn.sampled_softmax_loss`` with
    ``n_negative_samples`` classes drawn by the log-uniform (Zipfian)
    sampler, bilm-tf's choice. The vocabulary file is sorted by descending
    count, so low ids are frequent. In evaluation it is the full softmax
    cross-entropy. When ``n_negative_samples >= n_tokens_vocab``, the full
    softmax is used in training too, since sampling every class only adds
    noise.

    The weights keep bilm-tf's layout: ``softmax/W (n_tokens_vocab, dim)``
    and ``softmax/b (n_tokens_vocab,)``. With ``share_weights=True`` the
    layer owns only the bias. The caller passes the shared
    ``(n_tokens_vocab, dim)`` matrix, the token embedding table without its
    padding row.

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
        sample_seed: None for TensorFlow's sampler, its state in the op.
            Or a `(2,)` int seed, and the negative samples are then a
            stateless function of it, of the same distribution
            (:func:`stateless_log_uniform_candidates`). The training loop
            draws them so, and a resumed run samples what an uninterrupted
            one does.

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
        # float32 under any policy (no product worth a lower precision
        # here): bilm_keras.layers.precision
        precision.float32_io(self)
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
                autocast=False,
                name="W",
                shape=(self.n_tokens_vocab, self.dim),
                initializer=initial(keras.initializers.RandomNormal(
                    stddev=self.weight_stddev
                )),
            )
        self.b = self.add_weight(
            autocast=False,
            name="b", shape=(self.n_tokens_vocab,), initializer="zeros"
        )

    def call(self, inputs, targets, training=False, softmax_weights=None,
             sample_seed=None):
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
            sampled_values = None if sample_seed is None else (
                stateless_log_uniform_candidates(
                    labels, self.n_negative_samples, self.n_tokens_vocab,
                    sample_seed))
            losses = tf.nn.sampled_softmax_loss(
                weights=weights,
                biases=self.b.value,
                labels=labels,
                inputs=x,
                num_sampled=self.n_negative_samples,
                num_classes=self.n_tokens_vocab,
                num_true=1,
                sampled_values=sampled_values,
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
