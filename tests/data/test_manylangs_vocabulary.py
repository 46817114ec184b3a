"""The training vocabulary of a converted ELMoForManyLangs model: its char
rows are upstream's own ids (``reference.hdf5``'s ``char_ids``/``word_ids``),
for words in ``vocab.txt`` and out of it, in both directions."""

import json
import random

import h5py
import numpy as np
import pytest

from bilm_keras.data.lm_dataset import LMDataset
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.data.manylangs_vocabulary import ManyLangsCharsVocabulary
from bilm_keras.data.vocabulary import VocabularyError

MC = 20


@pytest.fixture(scope="module")
def fixture_sentences(manylangs_fixtures):
    sentences = json.loads(
        (manylangs_fixtures / "sentences.json").read_text("utf-8"))
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as f:
        ids = [np.concatenate([f[f"char_ids/{i}"][...],
                               f[f"word_ids/{i}"][...][:, None]], axis=1)
               for i in range(len(sentences))]
    # a corpus is whitespace-split: the sentences whose tokens have none
    return [(s, r) for s, r in zip(sentences, ids)
            if not any(c.isspace() for t in s for c in t)]


def _vocab(manylangs_fixtures, tmp_path, words, with_word_dic=True):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(["<S>", "</S>", "<UNK>", *words]) + "\n",
                          encoding="utf-8")
    model = manylangs_fixtures / "tiny.model"
    return ManyLangsCharsVocabulary.from_files(
        vocab_file, model / "char.dic",
        model / "word.dic" if with_word_dic else None, MC,
        validate_file=True)


@pytest.mark.parametrize("reverse", [False, True])
def test_dataset_rows_are_upstream_ids(manylangs_fixtures, tmp_path,
                                       fixture_sentences, reverse):
    # half the words in vocab.txt, half spelled as OOV tokens
    words = sorted({t for s, _ in fixture_sentences for t in s})[::2]
    vocab = _vocab(manylangs_fixtures, tmp_path, words)
    assert vocab.max_characters_per_token == MC + 1
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(" ".join(s) for s, _ in fixture_sentences) + "\n",
        encoding="utf-8")
    data = LMDataset(str(corpus), vocab, reverse=reverse, test=True)
    encoded = list(data.iter_encoded())
    assert len(encoded) == len(fixture_sentences)
    for (ids, chars), (tokens, want) in zip(encoded, fixture_sentences):
        np.testing.assert_array_equal(
            chars, want[::-1] if reverse else want, err_msg=str(tokens))
        assert ids[1:-1].tolist() == [
            vocab.word_to_id(t) for t in (tokens[::-1] if reverse
                                          else tokens)]


def test_without_word_part_rows_are_char_ids(manylangs_fixtures, tmp_path,
                                             fixture_sentences):
    vocab = _vocab(manylangs_fixtures, tmp_path, ["the"],
                   with_word_dic=False)
    assert vocab.max_characters_per_token == MC
    tokens, want = fixture_sentences[0]
    rows = [vocab.word_to_char_ids(t) for t in ["<S>", *tokens, "</S>"]]
    np.testing.assert_array_equal(rows, want[:, :MC])


def test_too_short_max_characters_is_named(manylangs_fixtures, tmp_path):
    with pytest.raises(VocabularyError, match="expected at least 7"):
        ManyLangsCharsVocabulary(None, {}, None, 6)


def test_rows_equal_manylangs_batcher(manylangs_fixtures, tmp_path):
    """Training and inference spell a token alike: random strings (emoji,
    kana, CJK, combining marks, over-long, the specials as text)."""
    rng = random.Random(7)
    alphabet = list("abcXYZ<>/今天好我们ひらカタ") + ["\u0301", "\u3000",
                                                  "😀", "🏽", "𠀋"]
    tokens = ["<bos>", "<eos>", "<oov>", "<pad>", "<S>", "</S>"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 25)))
        for _ in range(200)
    ]
    vocab = _vocab(manylangs_fixtures, tmp_path, tokens[::3])
    model = manylangs_fixtures / "tiny.model"
    batcher = ManyLangsBatcher.from_files(model / "char.dic",
                                          model / "word.dic", MC)
    for token in tokens:
        want = (batcher.token_ids({"<S>": "<bos>", "</S>": "<eos>"}.get(
            token, token)))
        np.testing.assert_array_equal(vocab.word_to_char_ids(token), want,
                                      err_msg=repr(token))
