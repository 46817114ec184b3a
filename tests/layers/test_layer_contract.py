"""Every Keras layer of bilm_keras meets the layer contract
(config round trip, serialization, symbolic + eager call, fit, .keras)."""

import numpy as np
import pytest

from bilm_keras.layers import (
    CharCNNEmbedder,
    Highway,
    ScalarMix,
    TokenEmbedder,
)
from helpers import run_layer_test

RNG = np.random.default_rng(0)


@pytest.mark.slow
def test_highway(tmp_path):
    x = RNG.normal(size=(4, 3, 8)).astype("float32")
    run_layer_test(Highway, {"carry_bias_initializer": -1.0}, x, (4, 3, 8),
                   tmp_path)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_char_cnn_embedder(tmp_path, activation):
    ids = RNG.integers(1, 262, size=(4, 5, 12)).astype("int32")
    run_layer_test(
        CharCNNEmbedder,
        dict(filters=[[1, 4], [3, 8]], char_embedding_dim=4, n_highway=1,
             projection_dim=6, activation=activation,
             max_characters_per_token=12),
        ids, (4, 5, 6), tmp_path,
    )


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_char_cnn_embedder_with_word_part(tmp_path):
    """ELMoForManyLangs' variant: the last id column is a word id, and the
    projection is there although filters == projection_dim."""
    ids = RNG.integers(1, 30, size=(4, 5, 13)).astype("int32")
    ids[..., 12] = RNG.integers(0, 10, size=(4, 5))  # word ids 0..9
    run_layer_test(
        CharCNNEmbedder,
        dict(filters=[[1, 4], [3, 8]], char_embedding_dim=4, n_highway=1,
             projection_dim=12, n_characters=30,
             max_characters_per_token=12, word_embedding_dim=3, n_words=9,
             always_project=True),
        ids, (4, 5, 12), tmp_path,
    )


def test_token_embedder(tmp_path):
    ids = RNG.integers(0, 10, size=(4, 5)).astype("int32")
    run_layer_test(TokenEmbedder, dict(n_tokens_vocab=9, embedding_dim=3), ids,
                   (4, 5, 3), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"do_layer_norm": True},
     pytest.param({"use_top_only": True}, marks=pytest.mark.slow),
     pytest.param({"l2_coef": 0.1}, marks=pytest.mark.slow)],
)
def test_scalar_mix(tmp_path, kwargs):
    lm = RNG.normal(size=(4, 3, 5, 6)).astype("float32")
    mask = np.ones((4, 5), bool)
    mask[0, 3:] = False
    run_layer_test(ScalarMix, dict(n_layers=3, **kwargs), (lm, mask),
                   (4, 5, 6), tmp_path)
