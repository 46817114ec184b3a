"""TokenMask: the tokens of sentences split as ``str.split()``, of padded
tokens, or of google/elmo/3's ``sequence_len``."""

import keras
import numpy as np
import tensorflow as tf

from bilm_keras.export.token_mask import TokenMask


def test_sentences_split_on_any_whitespace():
    mask = TokenMask()(tf.constant(["a  b\tc", "", " d\u3000e "]))
    np.testing.assert_array_equal(mask, [[True, True, True],
                                         [False, False, False],
                                         [True, True, False]])


def test_padded_tokens_and_their_lengths():
    tokens = tf.constant([["a", "b", ""], ["c", "", ""]])
    np.testing.assert_array_equal(TokenMask()(tokens),
                                  [[True, True, False], [True, False, False]])
    np.testing.assert_array_equal(TokenMask()(tokens, tf.constant([3, 0])),
                                  [[True, True, True], [False, False, False]])


def test_symbolic_shapes():
    assert TokenMask()(keras.Input(shape=(), dtype="string")).shape == (
        None, None)
    assert TokenMask()(keras.Input(shape=(7,), dtype="string")).shape == (
        None, 7)
