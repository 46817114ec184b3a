"""tf.train.Checkpoint (training, restart) sees every backbone variable."""

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.models import BiLMBackbone


@pytest.mark.parametrize("use_chars", [True, False])
def test_checkpoint_holds_every_variable(tmp_path, use_chars):
    kwargs = dict(lstm_dim=8, projection_dim=4, n_layers=3,
                  use_character_inputs=use_chars)
    if use_chars:
        kwargs.update(filters=[[1, 4], [2, 4], [3, 2]], n_highway=2,
                      char_embedding_dim=3, max_characters_per_token=8)
    else:
        kwargs.update(n_tokens_vocab=10)
    backbone = BiLMBackbone(**kwargs).build_all()
    path = tf.train.Checkpoint(model=backbone).write(str(tmp_path / "ckpt"))
    saved = [n for n, _ in tf.train.list_variables(path)
             if n.startswith("model/")]
    assert len(saved) == len(backbone.weights)

    fresh = BiLMBackbone(**kwargs).build_all()
    tf.train.Checkpoint(model=fresh).read(path).assert_consumed()
    for a, b in zip(backbone.weights, fresh.weights):
        assert a.path.split("/", 1)[1] == b.path.split("/", 1)[1]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
