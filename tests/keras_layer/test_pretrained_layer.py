"""from_pretrained's loading: the resolved folder read into the layer's
own biLM, one biLM built, its weights compared with the reference
embeddings elsewhere (test_elmo_embedding.py)."""

import numpy as np

from bilm_keras import ELMoEmbedding
from bilm_keras.keras_layer import pretrained_layer
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.weights.bilm_tf_hdf5 import load_bilm_tf_hdf5
from helpers import counted_calls, hdf5_datasets


def test_one_bilm_built_and_loaded_in_place(model_dir, monkeypatch):
    built = counted_calls(monkeypatch, BiLMBackbone, "from_options")
    loads = []

    def load(backbone, weight_file, *args, **kwargs):
        loads.append((backbone, str(weight_file)))
        return load_bilm_tf_hdf5(backbone, weight_file, *args, **kwargs)

    monkeypatch.setattr(pretrained_layer, "load_bilm_tf_hdf5", load)
    layer = ELMoEmbedding.from_pretrained(model_dir)
    assert len(built) == 1  # the layer's own: no facade, no copy
    assert loads == [(layer.bilm, str(model_dir / "lm_weights.hdf5"))]
    # the file's token char embedding, padding row first, in the layer
    table = hdf5_datasets(model_dir / "lm_weights.hdf5")["char_embed"]
    embedding = next(w for w in layer.bilm.weights
                     if "char_embed" in w.path)
    np.testing.assert_array_equal(np.asarray(embedding)[1:], table)
