"""Vocabulary, UnicodeCharsVocabulary, Batcher and TokenBatcher against
bilm-tf's semantics (and the independent numpy char-id function)."""

import numpy as np
import pytest

import numpy_reference as nr
from bilm_keras import Batcher, TokenBatcher, UnicodeCharsVocabulary
from bilm_keras.data import Vocabulary, VocabularyError


def test_char_ids_match_reference(model_dir):
    sentences = [["Hello", "world", "!"], [], ["深度学习", "é", "<S>"]]
    batcher = Batcher(str(model_dir / "vocab_test.txt"), 50)
    ids = batcher.batch_sentences(sentences)
    assert ids.shape == (3, 5, 50) and ids.dtype == np.int64
    np.testing.assert_array_equal(ids, nr.sentence_char_ids(sentences, 50))
    # the same without a vocabulary file
    np.testing.assert_array_equal(Batcher(None, 50).batch_sentences(sentences),
                                  ids)


def test_char_id_layout():
    ids = Batcher(None, 8).batch_sentences([["ab"]])[0]
    # +1 shifted: BOW=259, BOS=257, EOW=260, PAD=261, bytes+1
    np.testing.assert_array_equal(ids[0], [259, 257, 260] + [261] * 5)
    np.testing.assert_array_equal(ids[1], [259, 98, 99, 260] + [261] * 4)
    np.testing.assert_array_equal(ids[2], [259, 258, 260] + [261] * 5)


def test_long_token_is_truncated_to_max_minus_two_bytes():
    token = "x" * 30 + "深"  # 33 UTF-8 bytes
    row = Batcher(None, 10).batch_sentences([[token]])[0, 1]
    assert list(row) == [259] + [ord("x") + 1] * 8 + [260]
    row = Batcher(None, 33).batch_sentences([[token]])[0, 1]
    # 31 bytes kept: the 3-byte character is cut after its first byte
    assert list(row[1:32]) == [ord("x") + 1] * 30 + [0xE6 + 1]
    assert row[32] == 260


def test_token_batcher(train_dir):
    batcher = TokenBatcher(str(train_dir / "vocab.txt"))
    vocab = Vocabulary(str(train_dir / "vocab.txt"))
    ids = batcher.batch_sentences([["the", "notaword"], []])
    assert ids.shape == (2, 4)
    assert list(ids[0]) == [vocab.bos + 1, vocab.word_to_id("the") + 1,
                            vocab.unk + 1, vocab.eos + 1]
    assert list(ids[1]) == [vocab.bos + 1, vocab.eos + 1, 0, 0]


def test_encode_reverse(train_dir):
    vocab = Vocabulary(str(train_dir / "vocab.txt"), validate_file=True)
    fwd = vocab.encode("the of")
    rev = vocab.encode("of the", reverse=True)
    assert list(fwd) == [vocab.bos, vocab.word_to_id("the"),
                         vocab.word_to_id("of"), vocab.eos]
    assert list(rev) == [vocab.eos, vocab.word_to_id("of"),
                         vocab.word_to_id("the"), vocab.bos]


def test_chars_vocabulary_caches_bytes(model_dir):
    vocab = UnicodeCharsVocabulary(str(model_dir / "vocab_test.txt"), 50)
    word = vocab.id_to_word(0)
    np.testing.assert_array_equal(vocab.word_to_char_ids(word),
                                  nr.word_char_ids(word, 50))
    np.testing.assert_array_equal(vocab.word_to_char_ids("<S>"),
                                  vocab.bos_chars)


@pytest.mark.parametrize(
    "lines,missing",
    [(["a", "b"], "<S>, </S>, <UNK>"), (["<S>", "</S>", "a"], "<UNK>")],
)
def test_vocabulary_without_special_tokens(tmp_path, lines, missing):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(VocabularyError, match=f"vocab.txt.*missing: {missing}"):
        Vocabulary(str(path), validate_file=True)
    # TokenBatcher needs only the boundaries (<UNK> is optional)
    if "<S>" in missing:
        with pytest.raises(VocabularyError,
                           match="vocab.txt: a token-input vocabulary must "
                                 "contain .* missing: <S>, </S>$"):
            TokenBatcher(str(path))
    else:
        TokenBatcher(str(path))


def _bilm_tf_token_vocab(path, tokens):
    """The vocabulary of bilm-tf's ``usage_token.py``: a set of ``<S>``,
    ``</S>`` and the tokens, joined by newlines (no ``<UNK>``, no final
    newline, set order)."""
    all_tokens = set(["<S>", "</S>"] + tokens)
    path.write_text("\n".join(all_tokens))
    return [line for line in path.read_text().split("\n")]


def test_token_batcher_without_unk(tmp_path):
    path = tmp_path / "vocab_small.txt"
    lines = _bilm_tf_token_vocab(path, ["What", "are", "biLMs", "?"])
    ids = TokenBatcher(str(path)).batch_sentences(
        [["What", "are", "biLMs", "?"], ["?"], []])
    line = {t: i + 1 for i, t in enumerate(lines)}  # +1: 0 is padding
    s, e = line["<S>"], line["</S>"]
    np.testing.assert_array_equal(ids, [
        [s, line["What"], line["are"], line["biLMs"], line["?"], e],
        [s, line["?"], e, 0, 0, 0],
        [s, e, 0, 0, 0, 0],
    ])


def test_token_batcher_without_unk_names_a_missing_token(tmp_path):
    path = tmp_path / "vocab.txt"
    _bilm_tf_token_vocab(path, ["a", "b"])
    batcher = TokenBatcher(str(path))
    with pytest.raises(
        VocabularyError,
        match=r"vocab\.txt: token 'foo' \(sentences\[1\]\[2\]\) is not in "
              r"the vocabulary, which has no <UNK> to map it to; add it or "
              r"<UNK>$",
    ):
        batcher.batch_sentences([["a"], ["b", "a", "foo", "foo"]])
    with pytest.raises(VocabularyError,
                       match=r"token 'x' \(sentences\[0\]\[0\]\).* \(2 other "
                             r"missing tokens: 'y', 'z'\)$"):
        batcher.batch_sentences([["x", "a"], ["y", "z", "x"]])


def test_token_batcher_with_unk_maps_unknown_tokens(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("<S>\n</S>\n<UNK>\na\n")
    ids = TokenBatcher(str(path)).batch_sentences([["a", "foo"]])
    np.testing.assert_array_equal(ids, [[1, 4, 3, 2]])


def test_missing_vocabulary_file(tmp_path):
    with pytest.raises(VocabularyError, match="nope.txt: vocabulary file not"):
        Batcher(str(tmp_path / "nope.txt"), 50)


@pytest.mark.parametrize(
    "sentences,error,match",
    [
        ([], ValueError, "expected at least one sentence, found 0"),
        ("a b", TypeError, "expected a list of token lists, found str"),
        (["a b"], TypeError, r"sentences\[0\]: expected a list of tokens"),
        ([["a", 3]], TypeError, r"sentences\[0\]\[1\]: expected a str token, "
                                "found int"),
        ([["a", None]], TypeError, "found NoneType"),
    ],
)
def test_bad_sentences(sentences, error, match):
    with pytest.raises(error, match=match):
        Batcher(None, 50).batch_sentences(sentences)
