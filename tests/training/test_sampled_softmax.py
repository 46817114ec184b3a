import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.layers.sampled_softmax import SampledSoftmaxLoss
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.models.bilm_backbone import BiLMBackbone
from helpers import fixture_options


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_full_softmax_matches_numpy():
    layer = SampledSoftmaxLoss(n_tokens_vocab=7, dim=4, n_negative_samples=3)
    layer.build()
    rng = np.random.default_rng(0)
    layer.b.assign(rng.normal(size=7).astype("float32"))
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    t = rng.integers(0, 7, size=(2, 5))
    got = layer(x, t, training=False).numpy()
    logp = _log_softmax(x @ layer.W.numpy().T + layer.b.numpy())
    want = -np.take_along_axis(logp, t[..., None], -1)[..., 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_training_samples_unless_negatives_cover_the_vocabulary():
    x = tf.random.normal((3, 4, 4), seed=2)
    t = tf.zeros((3, 4), tf.int32)
    sampled = SampledSoftmaxLoss(n_tokens_vocab=50, dim=4, n_negative_samples=5,
                                 seed=1)
    full = sampled(x, t, training=False)
    got = sampled(x, t, training=True)
    assert got.shape == (3, 4) and np.isfinite(got.numpy()).all()
    assert not np.allclose(got.numpy(), full.numpy())
    # sampling every class would only add noise: the full softmax is used
    covering = SampledSoftmaxLoss(n_tokens_vocab=50, dim=4,
                                  n_negative_samples=50)
    covering.build()
    covering.W.assign(sampled.W)
    np.testing.assert_allclose(covering(x, t, training=True).numpy(),
                               full.numpy(), rtol=1e-6)


def test_config_round_trip():
    layer = SampledSoftmaxLoss(10, 4, n_negative_samples=3, seed=5,
                               name="softmax")
    config = layer.get_config()
    clone = SampledSoftmaxLoss.from_config(config)
    assert clone.get_config() == config
    again = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer))
    assert again.get_config() == config


def test_shared_softmax_needs_weights():
    layer = SampledSoftmaxLoss(10, 4, share_weights=True)
    with pytest.raises(ValueError, match="softmax_weights"):
        layer(tf.ones((1, 2, 4)), tf.zeros((1, 2), tf.int32))


def test_language_model_config_round_trip_and_weight_names():
    lm = LanguageModel.from_options(fixture_options(), n_tokens_vocab=32)
    lm.build_all()
    names = {v.path for v in lm.variables}
    assert "language_model/softmax/W" in names
    assert "language_model/softmax/b" in names
    clone = LanguageModel.from_config(lm.get_config())
    assert clone.get_config() == lm.get_config()


def test_shared_embedding_softmax_uses_the_token_table():
    lm = LanguageModel.from_options(fixture_options(share=True),
                                    n_tokens_vocab=32)
    lm.build_all()
    assert not any(v.path.endswith("softmax/W") for v in lm.variables)
    assert lm.softmax.share_weights


def test_shared_embedding_softmax_with_chars_is_an_error():
    backbone = BiLMBackbone.from_options(fixture_options(use_chars=True))
    with pytest.raises(ValueError, match="share_embedding_softmax"):
        LanguageModel(backbone, 32, share_embedding_softmax=True)


# ------------------------------------- negative samples from a step's seed
def _numpy_tries(seed, n_blocks, block, range_max):
    """The tries the stateless sampler draws, in numpy from the same
    uniforms (``floor(exp(u * log(V + 1))) - 1``, TF's LogUniformSampler)."""
    from bilm_keras.layers.dropout import fold_seed

    u = np.concatenate([
        tf.random.stateless_uniform([block], seed=fold_seed(seed, i),
                                    dtype=tf.float64).numpy()
        for i in range(n_blocks)])
    return (np.exp(u * np.log(range_max + 1.0)).astype(np.int64) - 1) % (
        range_max)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_stateless_samples_are_tensorflows_distribution_and_counts():
    from bilm_keras.layers.sampled_softmax import (
        stateless_log_uniform_candidates,
    )

    V, K = 32, 16  # the fixture's softmax: most tries are repeats
    labels = tf.constant([[0], [5], [31]], tf.int64)
    seed = tf.constant([3, 9], tf.int64)
    sampled, true_count, sampled_count = stateless_log_uniform_candidates(
        labels, K, V, seed)
    again = stateless_log_uniform_candidates(labels, K, V, seed)
    np.testing.assert_array_equal(sampled, again[0])  # a function of seed
    other = stateless_log_uniform_candidates(
        labels, K, V, tf.constant([3, 10], tf.int64))[0]
    assert not np.array_equal(sampled, other)
    # traced, as the training step runs it, with the loop past its first
    # block of tries (the tiny preset's 256 negatives of a 461-token
    # vocabulary): the same three results as eagerly (a graph once lost
    # the tries' length there)
    def both(k, v):
        args = (labels, k, v, seed)
        return (stateless_log_uniform_candidates(*args),
                tf.function(stateless_log_uniform_candidates)(*args))

    for k, v in ((K, V), (256, 461)):
        for eager, graph in zip(*both(k, v)):
            np.testing.assert_array_equal(eager.numpy(), graph.numpy())
    # numpy: the first K distinct tries, in the order drawn, and TF's
    # expected counts 1 - (1 - p)^n_tries (ExpectedCountHelper)
    tries = _numpy_tries(seed, 4, 64, V)
    distinct, first = np.unique(tries, return_index=True)
    order = np.argsort(first)
    want = distinct[order][:K]
    n_tries = first[order][K - 1] + 1
    np.testing.assert_array_equal(sampled.numpy(), want)
    assert len(set(want)) == K and want.min() >= 0 and want.max() < V

    def p(c):
        return np.log((c + 2.0) / (c + 1.0)) / np.log(V + 1.0)

    np.testing.assert_allclose(sampled_count.numpy(),
                               -np.expm1(n_tries * np.log1p(-p(want))),
                               rtol=1e-6)
    np.testing.assert_allclose(true_count.numpy()[:, 0],
                               -np.expm1(n_tries * np.log1p(-p(
                                   np.array([0, 5, 31])))), rtol=1e-6)
    # over many seeds, each class as often as TensorFlow's sampler draws it
    V, K, n = 1000, 50, 300
    ours, theirs = np.zeros(V), np.zeros(V)
    draw = tf.function(lambda s: stateless_log_uniform_candidates(
        labels, K, V, s)[0])
    for i in range(n):
        ours[draw(tf.constant([i, 1], tf.int64)).numpy()] += 1
        theirs[tf.random.log_uniform_candidate_sampler(
            labels, 1, K, True, V, seed=i + 1)[0].numpy()] += 1
    for first, end in [(0, 4), (4, 20), (20, 100), (100, 1000)]:
        assert abs(ours[first:end].sum() - theirs[first:end].sum()) < (
            0.1 * theirs[first:end].sum() + 20), (first, end)


def test_a_sample_seed_makes_the_training_loss_a_function_of_it():
    layer = SampledSoftmaxLoss(n_tokens_vocab=50, dim=4,
                               n_negative_samples=5)
    x = tf.random.normal((3, 4, 4), seed=2)
    t = tf.ones((3, 4), tf.int32)
    seed = tf.constant([1, 2], tf.int64)
    first = layer(x, t, training=True, sample_seed=seed).numpy()
    np.testing.assert_array_equal(
        layer(x, t, training=True, sample_seed=seed).numpy(), first)
    other = tf.constant([1, 3], tf.int64)
    assert not np.array_equal(
        layer(x, t, training=True, sample_seed=other).numpy(), first)
    full = layer(x, t, training=False, sample_seed=seed).numpy()
    assert not np.allclose(first, full)
