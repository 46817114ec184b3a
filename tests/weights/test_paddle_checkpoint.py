"""PaddleCheckpoint: a PaddleModel checked against our LanguageModel, with
bilm-tf's checkpoint interface: the weights, Paddle's softmax and its
Adagrad accumulators land in the right variables, in the variables'
layout; a model that does not fit is one line (PaddleNLP fixture,
tests/fixtures/paddlenlp_elmo)."""

import pathlib

import numpy as np
import pytest

from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_checkpoint import assign_bilm_tf_checkpoint
from bilm_keras.weights.paddle_checkpoint import read_paddle_checkpoint
from bilm_keras.weights.paddle_model import PaddleFormatError
from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"


def _language_model(options: dict) -> LanguageModel:
    return LanguageModel.from_options(BiLMOptions.from_dict(options),
                                      training=False).build_all()


def test_weights_softmax_and_accumulators_land_in_place():
    model = read_paddlenlp(FIXTURES / "checkpoints" / "final.pdparams")
    lm = _language_model(model.options)
    checkpoint = read_paddle_checkpoint(model, lm.backbone,
                                        softmax=lm.softmax)
    assert checkpoint.has_accumulators and checkpoint.global_step is None
    assign_bilm_tf_checkpoint(checkpoint)
    np.testing.assert_array_equal(lm.softmax.W.numpy(), model.softmax_weight)
    np.testing.assert_array_equal(lm.softmax.b.numpy(), model.softmax_bias)
    emb = lm.backbone.token_embedder
    table = emb.char_embedding.numpy()
    assert (table[0] == 0).all()  # the padding row
    np.testing.assert_array_equal(table[1:], model.lm_weights["char_embed"])
    accumulators = {e.checkpoint_name: v
                    for e, v in checkpoint.iter_accumulators()}
    char_acc = accumulators["char_embed"]
    assert (char_acc[0] == 1.0).all()  # the padding row starts as Adagrad
    np.testing.assert_array_equal(char_acc[1:],
                                  model.accumulators["char_embed"])
    cell = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"
    np.testing.assert_array_equal(accumulators[cell],
                                  model.accumulators[cell].T)  # kernel_t
    np.testing.assert_array_equal(accumulators["lm/softmax/W"],
                                  model.accumulators["softmax/W"])
    assert dict(checkpoint.read_hdf5_datasets()).keys() == \
        model.lm_weights.keys()


def test_no_accumulators_without_a_pdopt():
    model = read_paddlenlp(FIXTURES / "elmo.pdparams")
    lm = _language_model(model.options)
    checkpoint = read_paddle_checkpoint(model, lm.backbone,
                                        softmax=lm.softmax)
    assert not checkpoint.has_accumulators
    with pytest.raises(PaddleFormatError, match=r"elmo\.pdparams: holds no "
                                                r"Adagrad accumulators"):
        next(checkpoint.iter_accumulators())


def test_a_model_that_does_not_fit_is_one_line():
    model = read_paddlenlp(FIXTURES / "elmo.pdparams")
    options = dict(model.options,
                   char_cnn=dict(model.options["char_cnn"], n_highway=1))
    lm = _language_model(options)
    with pytest.raises(PaddleFormatError) as e:
        read_paddle_checkpoint(model, lm.backbone, softmax=lm.softmax)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{model.source}: does not fit the model its "
                              "options describe: ")
    assert "CNN_high_1/W_carry: in the checkpoint (20, 20), not in the " \
        "model" in message
