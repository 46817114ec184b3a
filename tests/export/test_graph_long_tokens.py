"""Tests for bilm_keras/export/graph_long_tokens.py: the SavedModel warns
once per call, on stderr, when a token is far longer than a word."""

import pytest
import tensorflow as tf

from bilm_keras.data.long_tokens import long_token_limit
from bilm_keras.export.graph_long_tokens import warn_of_long_tokens

#: 19 characters, 57 bytes: a line without spaces
UNSEGMENTED = "今天天氣真好阿潮水退了就知道誰沒穿褲子"


def test_the_graph_check_names_the_first_long_token(capfd):
    limit = long_token_limit(50, unit="bytes")  # 48 bytes
    tokens = tf.ragged.constant([["the", "cat"], ["x"], [UNSEGMENTED, "y"],
                                 [UNSEGMENTED + UNSEGMENTED]])
    check = tf.function(lambda t: warn_of_long_tokens(t, limit))
    assert bool(check(tokens))
    err = capfd.readouterr().err.splitlines()
    warnings = [line for line in err if line.startswith("WARNING: ")]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "WARNING: sentence 2 of the batch: a token of 57 bytes "
        f"('{UNSEGMENTED}'), longer than")
    assert "longer than the 48 bytes the model reads" in warnings[0]
    assert not bool(check(tf.ragged.constant([["the", "cat"]])))
    assert "WARNING" not in capfd.readouterr().err
    # characters: the same token is 19 long
    chars = long_token_limit(50, unit="characters", words=["今天"] * 10)
    assert bool(tf.function(lambda t: warn_of_long_tokens(t, chars))(
        tf.ragged.constant([[UNSEGMENTED]])))
    assert "a token of 19 characters" in capfd.readouterr().err


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_the_savedmodel_warns_once_per_call(fixture_export, capfd):
    module = tf.saved_model.load(fixture_export)
    capfd.readouterr()
    out = module.signatures["default"](
        strings=tf.constant(["the cat sat", UNSEGMENTED, UNSEGMENTED]))
    assert out["elmo"].shape[0] == 3
    err = capfd.readouterr().err
    assert err.count("WARNING: sentence 1 of the batch: a token of 57 "
                     "bytes") == 1
    assert err.count("WARNING") == 1
    module.signatures["tokens"](
        tokens=tf.constant([["the", UNSEGMENTED]]),
        sequence_len=tf.constant([2]))
    assert "WARNING: sentence 0 of the batch" in capfd.readouterr().err
    module.signatures["default"](strings=tf.constant(["the cat sat"]))
    assert "WARNING" not in capfd.readouterr().err
