"""Export from a training ``save_dir`` (checkpoint + options.json)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher, BidirectionalLanguageModel
from bilm_keras.export.hub_module import export_hub_from_save_dir
from bilm_keras.options import BiLMOptions
from bilm_keras.training.loop import (
    CheckpointError,
    build_model,
    model_checkpoint,
)
from conftest import REPO_ROOT


def _save_dir(path):
    options = json.loads((REPO_ROOT / "options" / "tiny.json").read_text())
    options["n_tokens_vocab"] = 30
    (path / "options.json").write_text(json.dumps(options))
    lm, _ = build_model(BiLMOptions.from_json(path / "options.json"),
                        training=False, seed=3)
    return lm


def test_export_equals_the_checkpointed_backbone(tmp_path):
    lm = _save_dir(tmp_path)
    tf.train.CheckpointManager(model_checkpoint(lm), str(tmp_path),
                               max_to_keep=1, checkpoint_name="model").save()
    out = export_hub_from_save_dir(save_dir=tmp_path,
                                   outdir=tmp_path / "hub")
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
        (tmp_path / "hub" / "assets" / "options.json").read_text())
    assert options["char_cnn"]["n_characters"] == 262  # prediction options


def test_save_dir_without_checkpoint(tmp_path):
    _save_dir(tmp_path)
    with pytest.raises(CheckpointError, match="no checkpoint found"):
        export_hub_from_save_dir(save_dir=tmp_path, outdir=tmp_path / "hub")
    assert not (tmp_path / "hub").exists()
