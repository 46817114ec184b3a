"""Layers cached once (in memory or through the bulk path's HDF5 dump)
and read back as tf.data: the mix on them gives ELMoEmbedding's own
outputs."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import ELMoEmbedding, EmbeddingSpec, dump_bilm_embeddings
from bilm_keras.keras_layer.cached_layers import (
    CachedLayersError,
    cached_layers_dataset,
)

P2 = 32  # the fixture's 2 * projection_dim


SENTENCES = [["The", "cat", "sat", "."], ["Hi"],
             "a longer sentence with 北京 in it .".split(), ["once", "more"]]


@pytest.mark.slow  # trains or saves a Keras model
def test_cached_layers_give_the_layers_outputs(model_dir, tmp_path):
    layer = ELMoEmbedding.from_pretrained(model_dir, layer_norm=True)
    layer.scalar_mix.scalar_weights.assign([0.3, -1.0, 0.7])
    layer.scalar_mix.gamma.assign([1.5])
    sentences = SENTENCES
    text = keras.Input(shape=(None,), dtype="string")
    padded = tf.constant([s + [""] * (9 - len(s)) for s in sentences])
    want = keras.Model(text, layer(text)).predict(padded, verbose=0)
    cached = keras.Input(shape=(3, None, P2))
    from_cache = keras.Model(cached, layer(cached))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(s) for s in sentences) + "\n",
                      "utf-8")
    dump = tmp_path / "layers.hdf5"
    dump_bilm_embeddings(None, str(corpus), str(model_dir / "options.json"),
                         str(model_dir / "lm_weights.hdf5"), str(dump),
                         EmbeddingSpec(output="all"))
    for source in (layer.embed_layers(sentences, batch_size=3), dump):
        got = from_cache.predict(cached_layers_dataset(source, batch_size=4),
                                 verbose=0)
        for i, s in enumerate(sentences):
            np.testing.assert_allclose(got[i, :len(s)], want[i, :len(s)],
                                       rtol=0, atol=1e-6)
            assert not got[i, len(s):].any()


def test_targets_are_padded_per_token():
    arrays = [np.ones((3, n, 4), np.float32) for n in (2, 3)]
    layers, tags = next(iter(cached_layers_dataset(
        arrays, [[1, 2], [3, 4, 5]], batch_size=2)))
    assert layers.shape == (2, 3, 3, 4)
    np.testing.assert_array_equal(tags, [[1, 2, 0], [3, 4, 5]])
    assert not layers[0, :, 2].numpy().any()


@pytest.mark.slow
def test_a_dump_without_every_layer(model_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b\n", "utf-8")
    dump = tmp_path / "top.hdf5"
    dump_bilm_embeddings(None, str(corpus), str(model_dir / "options.json"),
                         str(model_dir / "lm_weights.hdf5"), str(dump),
                         EmbeddingSpec(output="top"))
    with pytest.raises(CachedLayersError,
                       match=r"top.hdf5: output: expected 'all'.* 'top'"):
        cached_layers_dataset(dump)
    with pytest.raises(CachedLayersError, match=r"one per sentence \(1\)"):
        cached_layers_dataset([np.ones((3, 1, 4))] * 1, [1, 2])
