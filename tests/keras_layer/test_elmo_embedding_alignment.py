"""ELMoEmbedding with a cross-lingual alignment: each layer ``h`` as
``h @ W.T`` (numpy, 1e-6) before the mix, the matrices held by the layer
so that a ``.keras`` file keeps them, and a wrong count refused."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import ELMoEmbedding

XLING = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "xling"
SENTENCES = ["The cat sat .", "Hi !"]


def _matrices():
    with np.load(XLING / "matrices.npz") as f:
        return {name: f[name].astype(np.float64) for name in f.files}


@pytest.fixture(scope="module")
def plain(model_dir):
    layer = ELMoEmbedding.from_pretrained(model_dir, output="layers")
    return layer(tf.constant(SENTENCES)).numpy()  # (B, 3, T, D)


@pytest.mark.slow
def test_one_matrix_per_layer_maps_each(model_dir, plain):
    layer = ELMoEmbedding.from_pretrained(
        model_dir, output="layers",
        alignment=[XLING / f"layer_{k}.pth" for k in range(3)])
    assert not layer.alignment.trainable
    got = layer(tf.constant(SENTENCES)).numpy()
    matrices = _matrices()
    for k in range(3):
        want = plain[:, k].astype(np.float64) @ matrices[f"layer_{k}"].T
        np.testing.assert_allclose(got[:, k], want, rtol=0, atol=1e-6)


def test_one_matrix_maps_every_layer_before_the_mix(model_dir, plain):
    layer = ELMoEmbedding.from_pretrained(
        model_dir, alignment=XLING / "best_mapping.pth")
    got = layer(tf.constant(SENTENCES)).numpy()  # (B, T, D)
    w = _matrices()["best_mapping"]
    # an untrained mix is the mean of the layers
    want = plain.astype(np.float64).mean(axis=1) @ w.T
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.slow  # saves and loads a Keras model
def test_a_keras_file_keeps_the_alignment(model_dir, tmp_path):
    layer = ELMoEmbedding.from_pretrained(
        model_dir, alignment=XLING / "best_mapping.pth")
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, layer(text))
    model.save(tmp_path / "aligned.keras")
    loaded = keras.models.load_model(tmp_path / "aligned.keras")
    inputs = tf.constant(SENTENCES)
    np.testing.assert_array_equal(loaded(inputs).numpy(),
                                  model(inputs).numpy())


def test_an_alignment_count_other_than_one_or_each_layer(model_dir):
    layer = ELMoEmbedding.from_pretrained(model_dir)
    config = layer.get_config()
    assert config["alignment_matrices"] == 0
    with pytest.raises(ValueError, match=r"alignment_matrices: expected 0, "
                       r"1 or 3 \(one per layer\), found 2"):
        ELMoEmbedding(config["options"], alignment_matrices=2)
