"""Export from a training ``save_dir`` (checkpoint + options.json), and
the export as a Keras 3 layer.

The quick tier's SavedModel: a tiny random model (the ``tiny`` preset),
exported once for the module. (The fixture model's exports and their
consumers in fresh processes are in ``test_saved_model_export.py``, slow.)
"""

import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher, BidirectionalLanguageModel
from bilm_keras.export.elmo_hub_layer import ELMoHubLayer
from bilm_keras.export.saved_model_export import (
    ELMoHubModule,
    export_hub_from_save_dir,
)
from bilm_keras.options import BiLMOptions
from bilm_keras.save_dirs.our_run import CheckpointError
from bilm_keras.save_dirs.our_run import model_checkpoint
from bilm_keras.training.model_setup import build_model
from bilm_keras.presets import preset_file
from bilm_keras.weights.bilm_tf_checkpoint import CheckpointFileError


def _save_dir(path):
    options = json.loads(pathlib.Path(preset_file("tiny")).read_text())
    options["n_tokens_vocab"] = 30
    (path / "options.json").write_text(json.dumps(options))
    lm, _ = build_model(BiLMOptions.from_json(path / "options.json"),
                        training=False, seed=3)
    return lm


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``(save_dir, lm, SavedModel dir, model traces)``: a checkpointed
    random tiny model, its export, and the ``training`` value of each time
    the export traced the model."""
    save_dir = tmp_path_factory.mktemp("save_dir")
    lm = _save_dir(save_dir)
    tf.train.CheckpointManager(model_checkpoint(lm), str(save_dir),
                               max_to_keep=1, checkpoint_name="model").save()
    traces = []
    embed = ELMoHubModule.embed_char_ids

    def traced(self, char_ids, training=False):
        traces.append(training)
        return embed(self, char_ids, training=training)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ELMoHubModule, "embed_char_ids", traced)
        out = export_hub_from_save_dir(save_dir=save_dir,
                                       outdir=save_dir / "hub")
    return save_dir, lm, out, traces


@pytest.mark.slow  # the export is the slow tests' (nothing else is timed)
def test_the_model_is_traced_once_per_training_value(exported):
    # every signature and __call__ call these two graphs; the save traced
    # each a second time when they were tf.functions, not concrete ones
    assert sorted(exported[3]) == [False, True]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_export_equals_the_checkpointed_backbone(exported):
    save_dir, lm, out, _ = exported
    module = tf.saved_model.load(out)
    sentences = ["hello world !", "北京 欢迎 你", ""]
    got = module.signatures["default"](strings=tf.constant(sentences))
    ids = Batcher(None, 20).batch_sentences([s.split() for s in sentences])
    want = BidirectionalLanguageModel.from_backbone(lm.backbone)(ids)
    lm_emb = want["lm_embeddings"].numpy()
    assert np.abs(lm_emb).max() > 1e-3  # random weights, not zeros
    for i in (1, 2):
        np.testing.assert_allclose(got[f"lstm_outputs{i}"].numpy(),
                                   lm_emb[:, i], atol=1e-5)
    options = json.loads(
        (save_dir / "hub" / "assets" / "options.json").read_text())
    assert options["char_cnn"]["n_characters"] == 262  # prediction options


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_elmo_hub_layer_wraps_the_export(exported):
    # in-process and small; test_saved_model_export.py's Keras 3 consumer
    # fits the layer and rebuilds it from its config, on the fixture model
    # in a fresh process (slow tier)
    _, lm, out, _ = exported
    layer = ELMoHubLayer(out, output_key=None, name="elmo")
    assert sorted(w.name for w in layer.trainable_weights) == [
        "scalar_mix_gamma", "scalar_mix_scalar_weights"]
    sentences = ["hello world !", "北京 欢迎 你", ""]
    got = layer(tf.constant(sentences))
    ids = Batcher(None, 20).batch_sentences([s.split() for s in sentences])
    want = BidirectionalLanguageModel.from_backbone(lm.backbone)(ids)
    for i in (1, 2):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(got[f"lstm_outputs{i}"]),
            want["lm_embeddings"].numpy()[:, i], atol=1e-5)
    config = layer.get_config()
    assert {k: config[k] for k in ("savedmodel_path", "signature",
                                   "output_key")} == {
        "savedmodel_path": out, "signature": "default",
        "output_key": None}


def test_save_dir_without_checkpoint(tmp_path):
    _save_dir(tmp_path)
    with pytest.raises((CheckpointError, CheckpointFileError),
                       match="no checkpoint found"):
        export_hub_from_save_dir(save_dir=tmp_path, outdir=tmp_path / "hub")
    assert not (tmp_path / "hub").exists()
