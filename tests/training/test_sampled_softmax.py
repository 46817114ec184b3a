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
