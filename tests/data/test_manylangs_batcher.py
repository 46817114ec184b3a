"""ManyLangsBatcher: upstream's char and word ids (+1), checked against the
ids ELMoForManyLangs' own ``create_one_batch`` wrote into reference.hdf5,
and batcher_for_options' choice."""

import json

import h5py
import numpy as np
import pytest

from bilm_keras.data import (
    Batcher,
    ManyLangsBatcher,
    TokenBatcher,
    batcher_for_options,
)
from bilm_keras.data.manylangs_dictionaries import read_char_dic
from bilm_keras.options import BiLMOptions

MC = 20  # the fixture's max_characters_per_token


@pytest.fixture(scope="module")
def fixture(manylangs_fixtures):
    model = manylangs_fixtures / "tiny.model"
    sentences = json.loads(
        (manylangs_fixtures / "sentences.json").read_text("utf-8"))
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as f:
        chars = [f[f"char_ids/{i}"][...] for i in range(len(sentences))]
        words = [f[f"word_ids/{i}"][...] for i in range(len(sentences))]
    batcher = ManyLangsBatcher.from_files(model / "char.dic",
                                          model / "word.dic", MC)
    return dict(model=model, sentences=sentences, chars=chars, words=words,
                batcher=batcher)


def test_each_sentence_equals_upstream(fixture):
    batcher = fixture["batcher"]
    assert batcher.max_characters_per_token == MC + 1
    for i, sentence in enumerate(fixture["sentences"]):
        ids = batcher.batch_sentences([sentence])
        assert ids.dtype == np.int64 and ids.shape == (1, len(sentence) + 2,
                                                       MC + 1)
        # ours are upstream's raw ids + 1 (0 marks a position past the end)
        np.testing.assert_array_equal(ids[0, :, :MC], fixture["chars"][i] + 1,
                                      err_msg=f"char ids of sentence {i}")
        np.testing.assert_array_equal(ids[0, :, MC], fixture["words"][i] + 1,
                                      err_msg=f"word ids of sentence {i}")


def test_one_batch_pads_with_zeros(fixture):
    sentences = fixture["sentences"]
    ids = fixture["batcher"].batch_sentences(sentences)
    longest = max(len(s) for s in sentences) + 2
    assert ids.shape == (len(sentences), longest, MC + 1)
    for i, sentence in enumerate(sentences):
        n = len(sentence) + 2
        want = np.concatenate([fixture["chars"][i],
                               fixture["words"][i][:, None]], axis=1) + 1
        np.testing.assert_array_equal(ids[i, :n], want)
        assert not ids[i, n:].any()
        # a real position's first column (<eow> + 1) is never 0: the mask
        assert (ids[i, :n, 0] > 0).all()


def test_non_bmp_characters_are_one_code_point(fixture):
    batcher = fixture["batcher"]
    char_dic = batcher.char_dic
    oov, bow, eow, pad = (char_dic[k] for k in
                          ("<oov>", "<bow>", "<eow>", "<pad>"))
    # each emoji is one character (not a surrogate pair, not UTF-8 bytes)
    row = batcher.token_ids("a😀b")
    assert list(row[:6]) == [eow, char_dic["a"], oov, char_dic["b"], bow,
                             pad]
    # 20 emoji are cut to MC - 2 = 18 code points, the marker last
    row = batcher.token_ids("😀" * 20)
    assert list(row[:MC]) == [eow] + [oov] * (MC - 2) + [bow]
    assert row[MC] == batcher.word_dic["<oov>"]
    # an emoji that is in char.dic gets its own id
    emoji = ManyLangsBatcher({**char_dic, "🙂": len(char_dic)}, None, MC)
    assert list(emoji.token_ids("🙂🙂")[:4]) == [eow, len(char_dic),
                                                 len(char_dic), bow]


def test_truncation_before_word_lookup(fixture):
    batcher = fixture["batcher"]
    word_dic = batcher.word_dic
    assert "internationalization" in word_dic  # as the fixture README says
    # the cut string is looked up: 20 code points -> 18 -> <oov>
    assert batcher.token_ids("internationalization")[MC] == word_dic["<oov>"]
    cut = {**word_dic, "internationalizati": len(word_dic)}
    cut_batcher = ManyLangsBatcher(batcher.char_dic, cut, MC)
    assert cut_batcher.token_ids("internationalization")[MC] == len(word_dic)


def test_literal_boundaries_get_the_boundary_rows(fixture):
    batcher = fixture["batcher"]
    ids = batcher.batch_sentences([["<bos>", "x", "<eos>"]])[0]
    np.testing.assert_array_equal(ids[1], ids[0])
    np.testing.assert_array_equal(ids[3], ids[4])


def test_without_word_part(fixture):
    batcher = ManyLangsBatcher.from_files(fixture["model"] / "char.dic", None,
                                          MC)
    assert batcher.max_characters_per_token == MC
    sentence = fixture["sentences"][4]
    ids = batcher.batch_sentences([sentence])[0]
    np.testing.assert_array_equal(ids, fixture["chars"][4] + 1)


def test_bad_arguments(fixture):
    char_dic = fixture["batcher"].char_dic
    with pytest.raises(ValueError, match="max_characters_per_token: "
                       "expected an integer >= 7.*found 6"):
        ManyLangsBatcher(char_dic, None, 6)
    no_oov = {k: v for k, v in char_dic.items() if k != "<oov>"}
    with pytest.raises(ValueError, match="char_dic: expected the special "
                       "tokens .*missing: <oov>"):
        ManyLangsBatcher(no_oov, None, MC)
    with pytest.raises(TypeError, match="sentences: expected a list"):
        fixture["batcher"].batch_sentences("a b")


def _options(tmp_path, model, n_characters=107, n_words=78):
    (tmp_path / "options.json").write_text(json.dumps({
        "lstm": {"dim": 64, "projection_dim": 16, "n_layers": 2},
        "char_cnn": {"embedding": {"dim": 6},
                     "filters": [[1, 4], [2, 8], [3, 16], [4, 32]],
                     "n_highway": 2, "n_characters": n_characters,
                     "max_characters_per_token": MC, "activation": "relu"},
        "elmoformanylangs": {"char_dic": str(model / "char.dic"),
                             "word_dic": str(model / "word.dic"),
                             "word_embedding_dim": 8, "n_words": n_words},
    }))
    return BiLMOptions.from_json(tmp_path / "options.json")


def test_batcher_for_options(fixture, model_dir, tmp_path):
    batcher = batcher_for_options(_options(tmp_path, fixture["model"]))
    assert isinstance(batcher, ManyLangsBatcher)
    assert batcher.char_dic == read_char_dic(fixture["model"] / "char.dic")
    bilm_tf = BiLMOptions.from_json(model_dir / "options.json")
    assert isinstance(batcher_for_options(bilm_tf), Batcher)
    vocab = model_dir / "vocab_test.txt"
    token = batcher_for_options(bilm_tf, vocab, use_character_inputs=False)
    assert isinstance(token, TokenBatcher)
    with pytest.raises(ValueError, match="vocab_file: token input needs"):
        batcher_for_options(bilm_tf, use_character_inputs=False)


def test_batcher_for_options_checks_dictionary_sizes(fixture, tmp_path):
    model = fixture["model"]
    with pytest.raises(ValueError, match=r"char\.dic: expected 99 entries "
                       r"\(char_cnn.n_characters - 1 of the options\), "
                       "found 106"):
        batcher_for_options(_options(tmp_path, model, n_characters=100))
    with pytest.raises(ValueError, match=r"word\.dic: expected 77 entries "
                       r"\(elmoformanylangs.n_words of the options\), "
                       "found 78"):
        batcher_for_options(_options(tmp_path, model, n_words=77))
