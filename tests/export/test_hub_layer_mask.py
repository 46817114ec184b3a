"""ELMoHubLayer's mask: each signature's per-token outputs carry one, so a
Keras RNN after it gives a sentence the same output alone and padded."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher
from bilm_keras.export.elmo_hub_layer import ELMoHubLayer


@pytest.fixture(scope="module")
def savedmodel(fixture_export):
    return fixture_export


def _rnn_model(inputs, layer):
    keras.utils.set_random_seed(0)
    rnn = keras.layers.Bidirectional(
        keras.layers.LSTM(4, return_sequences=True))
    return keras.Model(inputs, rnn(layer(inputs)))


@pytest.mark.slow
def test_each_signature_masks_the_padding(savedmodel, model_dir):
    alone, padded = ["The cat sat ."], ["The cat sat .",
                                        "one two three four five six"]
    text = keras.Input(shape=(), dtype="string")
    model = _rnn_model(text, ELMoHubLayer(savedmodel, output_key="elmo"))
    a = model.predict(tf.constant(alone), verbose=0)[0]
    b = model.predict(tf.constant(padded), verbose=0)[0, :4]
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)

    tokens = {"tokens": keras.Input(shape=(None,), dtype="string",
                                    name="tokens"),
              "sequence_len": keras.Input(shape=(), dtype="int32",
                                          name="sequence_len")}
    model = _rnn_model(tokens, ELMoHubLayer(
        savedmodel, signature="tokens", output_key="elmo"))
    a = model.predict({"tokens": tf.constant([["The", "cat", "sat", "."]]),
                       "sequence_len": tf.constant([4])}, verbose=0)[0]
    b = model.predict({"tokens": tf.constant(
        [["The", "cat", "sat", ".", "x", "y"]]),
        "sequence_len": tf.constant([4])}, verbose=0)[0, :4]
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)

    batcher = Batcher(str(model_dir / "vocab_test.txt"), 50)
    ids = keras.Input(shape=(None, 50), dtype="int32")
    model = _rnn_model(ids, ELMoHubLayer(savedmodel, signature="elmo",
                                         output_key="elmo"))
    a = model.predict(batcher.batch_sentences([s.split() for s in alone]),
                      verbose=0)[0]
    b = model.predict(batcher.batch_sentences([s.split() for s in padded]),
                      verbose=0)[0, :4]
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_sentence_outputs_carry_no_mask(savedmodel):
    layer = ELMoHubLayer(savedmodel, output_key="default")
    assert layer.compute_mask(tf.constant(["a b"])) is None
    mask = ELMoHubLayer(savedmodel, output_key="elmo").compute_mask(
        tf.constant(["a b c", "d"]))
    np.testing.assert_array_equal(mask, [[True, True, True],
                                         [True, False, False]])
