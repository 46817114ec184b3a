"""In-graph ELMoForManyLangs ids against upstream's own ids.

``reference.hdf5`` holds upstream's ``create_one_batch`` char and word ids
of every fixture sentence (raw ids: ours are +1). Random strings (emoji,
kana, CJK, combining marks, over-long tokens) are checked against a plain
Python transcription of the fixture README's sections 1-3 and 8.
"""

import json
import random

import h5py
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.data.manylangs_dictionaries import read_char_dic, read_word_dic
from bilm_keras.export.graph_manylangs_ids import ManyLangsGraphIds

MC = 20


@pytest.fixture(scope="module")
def dictionaries(manylangs_fixtures):
    model = manylangs_fixtures / "tiny.model"
    return read_char_dic(model / "char.dic"), read_word_dic(model / "word.dic")


@pytest.fixture(scope="module")
def graph_ids(dictionaries):
    return ManyLangsGraphIds(*dictionaries, MC)


@pytest.fixture(scope="module")
def sentences(manylangs_fixtures):
    return json.loads(
        (manylangs_fixtures / "sentences.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def reference(manylangs_fixtures, sentences):
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as f:
        return [
            (f[f"char_ids/{i}"][...], f[f"word_ids/{i}"][...])
            for i in range(len(sentences))
        ]


def _check_against_reference(ids, sentences, reference):
    assert ids.dtype == np.int32
    assert ids.shape == (len(sentences),
                         max(map(len, sentences)) + 2, MC + 1)
    for i, (chars, words) in enumerate(reference):
        n = len(sentences[i]) + 2
        np.testing.assert_array_equal(ids[i, :n, :MC] - 1, chars,
                                      err_msg=f"char ids of sentence {i}")
        np.testing.assert_array_equal(ids[i, :n, MC] - 1, words,
                                      err_msg=f"word ids of sentence {i}")
        assert not ids[i, n:].any(), f"sentence {i}: nonzero past its end"


def test_ragged_tokens_equal_upstream_ids(graph_ids, sentences, reference):
    ids = graph_ids.batch_ids(tf.ragged.constant(sentences)).numpy()
    _check_against_reference(ids, sentences, reference)


def test_padded_tokens_equal_upstream_ids(graph_ids, sentences, reference):
    width = max(map(len, sentences))
    tokens = [s + [""] * (width - len(s)) for s in sentences]
    ids = graph_ids.padded_tokens_to_ids(
        tf.constant(tokens), tf.constant([len(s) for s in sentences])
    ).numpy()
    _check_against_reference(ids, sentences, reference)


def test_strings_equal_upstream_ids(graph_ids, sentences, reference):
    # `default` splits on whitespace: the sentences whose tokens have none
    kept = [i for i, s in enumerate(sentences)
            if not any(c.isspace() for t in s for c in t)]
    assert 4 not in kept and 11 not in kept and len(kept) == 13
    ids = graph_ids.sentences_to_ids(
        tf.constant([" ".join(sentences[i]) for i in kept])
    ).numpy()
    _check_against_reference(ids, [sentences[i] for i in kept],
                             [reference[i] for i in kept])


# ------------------------------------------------- the README, in Python
def _upstream_row(token, char_dic, word_dic):
    """Sections 1-3 and 8 of the fixture README, for one token."""
    token = token[: MC - 2]
    eow, bow, pad = char_dic["<eow>"], char_dic["<bow>"], char_dic["<pad>"]
    row = [pad] * MC
    row[0] = eow  # upstream's swap: the row starts with <eow>
    if token in ("<bos>", "<eos>"):
        row[1], row[2] = char_dic[token], bow
    else:
        for k, c in enumerate(token):
            row[k + 1] = char_dic.get(c, char_dic["<oov>"])
        row[len(token) + 1] = bow
    return row + [word_dic.get(token, word_dic["<oov>"])]


ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABC.,!?'<>/")
    + list("今天气很好我们去公园散步吧中华人民共和国")
    + list("ひらがなカタカナ")
    + ["\u0301", "\u0308", "\u200d", "\ufe0f", "\u3000", "\xa0"]
    + ["😀", "👍", "🏽", "👨", "𠀋", "𝔘"]
)
WORDS = ["<bos>", "<eos>", "<oov>", "<pad>", "New York", "今天", "the"]


def _random_sentences(rng, n):
    out = []
    for _ in range(n):
        tokens = []
        for _ in range(rng.randrange(0, 9)):
            if rng.random() < 0.2:
                tokens.append(rng.choice(WORDS) + "x" * rng.randrange(0, 2))
            else:
                tokens.append("".join(rng.choice(ALPHABET)
                                      for _ in range(rng.randrange(0, 26))))
        out.append(tokens)
    return out


def test_random_strings_follow_the_readme(graph_ids, dictionaries):
    char_dic, word_dic = dictionaries
    sentences = _random_sentences(random.Random(16), 40)
    ids = graph_ids.batch_ids(
        tf.ragged.constant(sentences, dtype=tf.string, ragged_rank=1)
    ).numpy()
    for i, tokens in enumerate(sentences):
        expected = np.array(
            [_upstream_row(t, char_dic, word_dic)
             for t in ["<bos>"] + tokens + ["<eos>"]]
        )
        n = len(tokens) + 2
        np.testing.assert_array_equal(ids[i, :n] - 1, expected,
                                      err_msg=f"sentence {tokens!r}")
        assert not ids[i, n:].any()


def test_random_strings_equal_manylangs_batcher(graph_ids, dictionaries):
    """The in-graph ids are the Python batcher's, bit for bit."""
    sentences = [s for s in _random_sentences(random.Random(61), 40) if s]
    ids = graph_ids.batch_ids(
        tf.ragged.constant(sentences, dtype=tf.string, ragged_rank=1)
    ).numpy()
    np.testing.assert_array_equal(
        ids, ManyLangsBatcher(*dictionaries, MC).batch_sentences(sentences))


def test_without_word_part_the_ids_are_the_char_rows(dictionaries,
                                                     sentences, reference):
    graph_ids = ManyLangsGraphIds(dictionaries[0], None, MC)
    ids = graph_ids.batch_ids(tf.ragged.constant(sentences)).numpy()
    assert ids.shape[-1] == MC
    for i, (chars, _) in enumerate(reference):
        np.testing.assert_array_equal(ids[i, : len(chars)] - 1, chars)


def test_empty_batch_and_empty_sentence(graph_ids, dictionaries):
    empty = graph_ids.sentences_to_ids(tf.constant([], tf.string))
    assert empty.shape == (0, 2, MC + 1)
    ids = graph_ids.sentences_to_ids(tf.constant(["", "今天"])).numpy()
    assert ids.shape == (2, 3, MC + 1)
    char_dic, word_dic = dictionaries
    bos = _upstream_row("<bos>", char_dic, word_dic)
    eos = _upstream_row("<eos>", char_dic, word_dic)
    np.testing.assert_array_equal(ids[0, :2] - 1, [bos, eos])
    assert not ids[0, 2].any()


def test_sequence_len_out_of_range_is_named(graph_ids):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="sequence_len: expected values <="):
        graph_ids.padded_tokens_to_ids(tf.constant([["a", "b"]]),
                                       tf.constant([3]))


def test_too_short_max_characters_is_named(dictionaries):
    with pytest.raises(ValueError, match="max_characters_per_token: "
                       "expected at least 7"):
        ManyLangsGraphIds(*dictionaries, 6)
