"""In-graph char ids (the exported signatures' tokenizer) against Batcher.

Batcher is the bilm-tf reference: every id must be equal, for any
language, over-long tokens (truncated by UTF-8 bytes, possibly inside a
character), the literal boundary tokens and every kind of whitespace.
"""

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher
from bilm_keras.export.graph_char_ids import (
    padded_tokens_to_char_ids,
    sentences_to_char_ids,
    split_sentences,
    token_char_ids,
)

SENTENCES = [
    "The U.S. Centers for Disease Control , then reversed itself .",
    "北京 欢迎 你 们",
    "السلام عليكم",
    "Привет , мир !",
    "emoji 😀👍🏽 family 👨‍👩‍👧",
    "combining e\u0301 and ﬁ ligature",
    "<S> </S> <UNK> <s> S>",
    "",
    "   ",
    "x" * 80 + " " + "é" * 40 + " " + "中" * 20 + " a" + "中" * 20,
    "tab\there\nnewline\r\x0bvt\x0cff",
    "ideographic\u3000space no\xa0break line\u2028sep en\u2002space",
    "file\x1csep group\x1dsep unit\x1fsep nel\x85end",
    "zero\u200bwidth\ufeffbom",  # not whitespace for str.split()
    "  leading and trailing  ",
]


def _batcher_ids(sentences, max_characters_per_token, vocab=None):
    return Batcher(vocab, max_characters_per_token).batch_sentences(
        [s.split() for s in sentences]
    )


def test_sentences_equal_batcher_exactly():
    ids = sentences_to_char_ids(tf.constant(SENTENCES), 50).numpy()
    expected = _batcher_ids(SENTENCES, 50)
    assert ids.dtype == np.int32
    assert ids.shape == expected.shape
    np.testing.assert_array_equal(ids, expected)


def test_vocabulary_does_not_change_the_ids(model_dir):
    ids = sentences_to_char_ids(tf.constant(SENTENCES), 50).numpy()
    expected = _batcher_ids(SENTENCES, 50, str(model_dir / "vocab_test.txt"))
    np.testing.assert_array_equal(ids, expected)


@pytest.mark.parametrize("max_characters_per_token", [3, 5, 12])
def test_short_max_characters_truncate_by_bytes(max_characters_per_token):
    ids = sentences_to_char_ids(tf.constant(SENTENCES),
                                max_characters_per_token).numpy()
    np.testing.assert_array_equal(
        ids, _batcher_ids(SENTENCES, max_characters_per_token))


def test_multibyte_character_is_cut_as_bilm_tf_does():
    # 1 byte + 20 * 3 bytes; 48 kept: 'a', 15 chars and 2 bytes of the 16th
    token = "a" + "中" * 20
    ids = token_char_ids(tf.constant([token]), 50).numpy()[0]
    kept = token.encode("utf-8")[:48]
    assert list(ids[1:49]) == list(kept)
    assert ids[49] == 259 and ids[0] == 258


def test_split_is_python_str_split():
    tokens = split_sentences(tf.constant(SENTENCES)).to_list()
    assert [[t.decode("utf-8") for t in row] for row in tokens] == [
        s.split() for s in SENTENCES
    ]


def test_padded_tokens_ignore_entries_past_sequence_len():
    rows = [["a", "北京", "x" * 60], ["<S>", "", ""], ["", "", ""]]
    lengths = [3, 1, 0]
    padded = [r[:n] + ["junk"] * (3 - n) for r, n in zip(rows, lengths)]
    ids = padded_tokens_to_char_ids(
        tf.constant(padded), tf.constant(lengths), 50
    ).numpy()
    expected = _batcher_ids([" ".join(r[:n]) for r, n in zip(rows, lengths)],
                            50)
    np.testing.assert_array_equal(ids, expected)


def test_padded_tokens_keep_the_input_width():
    # as google/elmo/3: the outputs' time axis is the input's max_len
    ids = padded_tokens_to_char_ids(
        tf.constant([["a"] + [""] * 4, ["b"] + [""] * 4]),
        tf.constant([1, 1]), 50,
    ).numpy()
    assert ids.shape == (2, 7, 50)
    np.testing.assert_array_equal(ids[:, :3], _batcher_ids(["a", "b"], 50))
    assert not ids[:, 3:].any()


def test_empty_string_token_inside_the_length_is_a_token():
    ids = padded_tokens_to_char_ids(
        tf.constant([[""]]), tf.constant([1]), 50
    ).numpy()
    np.testing.assert_array_equal(
        ids, Batcher(None, 50).batch_sentences([[""]])
    )


def test_empty_batch_gives_boundary_width():
    ids = sentences_to_char_ids(tf.constant([], tf.string), 50)
    assert tuple(ids.shape) == (0, 2, 50)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_in_a_tf_function_with_unknown_shapes():
    fn = tf.function(
        lambda s: sentences_to_char_ids(s, 50),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    np.testing.assert_array_equal(
        fn(tf.constant(SENTENCES[:4])).numpy(), _batcher_ids(SENTENCES[:4], 50)
    )


def test_bad_input():
    with pytest.raises(ValueError,
                       match="max_characters_per_token: expected at least 3"):
        token_char_ids(tf.constant(["a"]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="sequence_len: expected values <= tokens"):
        padded_tokens_to_char_ids(
            tf.constant([["a", "b"]]), tf.constant([3]), 50
        )
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="sequence_len: expected values >= 0"):
        padded_tokens_to_char_ids(
            tf.constant([["a", "b"]]), tf.constant([-1]), 50
        )
