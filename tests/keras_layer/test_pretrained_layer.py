"""from_pretrained's loading: the resolved folder or a training save_dir
read into the layer's own biLM, one biLM built, its weights compared with
the reference embeddings (here and in test_elmo_embedding.py) and with
bilm-tf's own dump of its run."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import BidirectionalLanguageModel, ELMoEmbedding
from bilm_keras.keras_layer import pretrained_layer
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.save_dirs.our_run import model_checkpoint
from bilm_keras.weights import bilm_tf_hdf5
from bilm_keras.weights.bilm_tf_hdf5 import (
    load_bilm_tf_hdf5,
    save_bilm_tf_hdf5,
)
from helpers import counted_calls, hdf5_datasets, load_reference_embeddings


def test_one_bilm_built_and_loaded_in_place(model_dir, monkeypatch):
    built = counted_calls(monkeypatch, BiLMBackbone, "from_options")
    loads = []

    def load(backbone, weight_file, *args, **kwargs):
        loads.append((backbone, weight_file.filename))
        return load_bilm_tf_hdf5(backbone, weight_file, *args, **kwargs)

    monkeypatch.setattr(pretrained_layer, "load_bilm_tf_hdf5", load)
    parsed = counted_calls(monkeypatch, BiLMOptions, "from_json")
    opened = counted_calls(monkeypatch, bilm_tf_hdf5, "_open_hdf5")
    layer = ELMoEmbedding.from_pretrained(model_dir)
    assert len(built) == 1  # the layer's own: no facade, no copy
    assert parsed == [str(model_dir / "options.json")]  # by resolve_model
    weights = str(model_dir / "lm_weights.hdf5")
    # one handle, for the options' fit and the load
    assert opened == [weights]
    assert loads == [(layer.bilm, weights)]
    # the file's token char embedding, padding row first, in the layer
    table = hdf5_datasets(model_dir / "lm_weights.hdf5")["char_embed"]
    embedding = next(w for w in layer.bilm.weights
                     if "char_embed" in w.path)
    np.testing.assert_array_equal(np.asarray(embedding)[1:], table)


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


# builds conftest's short_char_run, a training run (7-11 s on the AVX2
# EPYC), which no other quick test needs
@pytest.mark.slow
@pytest.mark.parametrize("writer", ["ours", "bilm-tf"])
def test_a_training_run_is_read_into_the_layer_alone(writer, short_char_run,
                                                     monkeypatch, tmp_path):
    # no language model (softmax included) nor facade built to copy from,
    # and the options parsed once
    def refused(self, *args, **kwargs):
        raise AssertionError(f"{type(self).__name__} built")

    monkeypatch.setattr(LanguageModel, "__init__", refused)
    monkeypatch.setattr(BidirectionalLanguageModel, "__init__", refused)
    built = counted_calls(monkeypatch, BiLMBackbone, "from_options")
    parsed = counted_calls(monkeypatch, BiLMOptions, "from_json")
    save_dir = (short_char_run[0] if writer == "ours"
                else FIXTURES / "bilm_tf_run" / "save_dir")
    layer = ELMoEmbedding.from_pretrained(save_dir, output="layers")
    assert len(built) == 1 and len(parsed) == 1
    if writer == "bilm-tf":
        # every weight as bilm-tf's own dump_weights wrote it
        save_bilm_tf_hdf5(layer.bilm, tmp_path / "read.hdf5")
        read = hdf5_datasets(tmp_path / "read.hdf5")
        dumped = hdf5_datasets(FIXTURES / "bilm_tf_run" / "lm_weights.hdf5")
        assert sorted(read) == sorted(dumped)
        for name, value in dumped.items():
            np.testing.assert_array_equal(read[name], value, err_msg=name)


@pytest.mark.slow  # builds the run's model, then the layer
def test_our_run_of_the_fixture_weights_gives_bilm_tf_reference(model_dir,
                                                               tmp_path):
    # a run's checkpoint holding bilm-tf's fixture weights, as our
    # training writes it: the layer read from it gives bilm-tf's numbers
    options = BiLMOptions.from_json(model_dir / "options.json").replace(
        n_tokens_vocab=10)
    lm = LanguageModel.from_options(options, training=False).build_all()
    load_bilm_tf_hdf5(lm.backbone, model_dir / "lm_weights.hdf5")
    save_dir = tmp_path / "run"
    model_checkpoint(lm).write(str(save_dir / "model-1"))
    options.to_json(save_dir / "options.json")
    layer = ELMoEmbedding.from_pretrained(save_dir, output="layers")
    sentences, expected = load_reference_embeddings(model_dir)
    firsts = [" ".join(sentences[k][0]) for k in range(3)]
    got = layer(tf.constant(firsts)).numpy()
    for k in range(3):
        want = expected[k][0]
        np.testing.assert_allclose(got[k, 2, :len(want)], want, rtol=0,
                                   atol=1e-6)
