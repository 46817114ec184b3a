"""weight_layers / ScalarMix against bilm-tf's formula computed in numpy."""

import numpy as np
import pytest

import numpy_reference as nr
from bilm_keras import Batcher, weight_layers
from bilm_keras.layers.weight_layers import reset_weight_layers


@pytest.fixture(scope="module")
def bilm_ops(fixture_bilm):
    model = fixture_bilm
    ids = Batcher(None, 50).batch_sentences(
        [["Pretty", "good", "."], ["a"], []])
    return model(ids)


@pytest.fixture(autouse=True)
def fresh_names():
    reset_weight_layers()
    yield
    reset_weight_layers()


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode",
    [{}, {"use_top_only": True}, {"do_layer_norm": True}],
    ids=["mix", "top-only", "layer-norm"],
)
def test_matches_numpy(bilm_ops, mode):
    ops = weight_layers("elmo", bilm_ops, l2_coef=0.01, **mode)
    mix = ops["scalar_mix"]
    # non-trivial weights, so the softmax and gamma really matter
    if not mode.get("use_top_only"):
        mix.scalar_weights.assign([0.3, -1.0, 2.0])
    mix.gamma.assign([1.7])
    ops = weight_layers("elmo", bilm_ops, l2_coef=0.01, **mode)
    w = (np.zeros(3) if mode.get("use_top_only")
         else np.array([0.3, -1.0, 2.0]))
    expected = nr.scalar_mix(
        bilm_ops["lm_embeddings"].numpy().astype(np.float64),
        bilm_ops["mask"].numpy(), w, 1.7, **mode)
    np.testing.assert_allclose(ops["weighted_op"].numpy(), expected,
                               atol=1e-5)
    reg = float(ops["regularization_op"])
    if mode.get("use_top_only"):
        assert reg == 0.0
    else:
        assert reg == pytest.approx(nr.l2_regularization(w, 0.01), rel=1e-5)


def test_fresh_weights_average_layers(bilm_ops):
    ops = weight_layers("fresh", bilm_ops)
    lm = bilm_ops["lm_embeddings"].numpy()
    np.testing.assert_allclose(ops["weighted_op"].numpy(), lm.mean(axis=1),
                               atol=1e-6)
    assert float(ops["regularization_op"]) == 0.0


def test_same_name_reuses_weights(bilm_ops):
    first = weight_layers("shared", bilm_ops)["scalar_mix"]
    assert weight_layers("shared", bilm_ops)["scalar_mix"] is first
    assert weight_layers("other", bilm_ops)["scalar_mix"] is not first
    with pytest.raises(ValueError, match="weight_layers\\('shared'\\): "
                                         "already created"):
        weight_layers("shared", bilm_ops, do_layer_norm=True)
