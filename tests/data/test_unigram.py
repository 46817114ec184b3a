"""The unigram perplexity bar, against a count done by hand."""

import math

import pytest

from bilm_keras.data.corpus import count_tokens
from bilm_keras.data.unigram import perplexity_of_counts
from bilm_keras.data.vocab_builder import build_vocab
from bilm_keras.data.vocabulary import Vocabulary


def test_uniform_counts_give_the_number_of_classes():
    assert perplexity_of_counts([5, 5, 5, 5, 0]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="at least one positive count"):
        perplexity_of_counts([0, 0])


def test_corpus_unigram_perplexity_by_hand(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a a b\n\nb c zz\n", encoding="utf-8")
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("<S>\n</S>\n<UNK>\na\nb\n", encoding="utf-8")
    # targets: a a b </S> b <UNK>(c) <UNK>(zz) </S> -> counts 2, 2, 2, 2
    # of 8 (boundary, a, b, <UNK>): a uniform 4-way distribution
    counts = count_tokens(str(corpus), vocab=Vocabulary(str(vocab_file)))
    assert counts["unigram_perplexity"] == pytest.approx(4.0)
    assert counts["n_tokens"] == 6 and counts["n_sentences"] == 2
    assert "unigram_perplexity" not in count_tokens(str(corpus))


def test_build_vocab_records_the_same_bar(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("x x x y\ny z\n", encoding="utf-8")
    stats = build_vocab(str(corpus), str(tmp_path / "v.txt"), min_count=2)
    # kept x (3), y (2); <UNK> z (1); boundary 2: of 8 targets
    p = [3 / 8, 2 / 8, 1 / 8, 2 / 8]
    expected = math.exp(-sum(q * math.log(q) for q in p))
    assert stats["unigram_perplexity"] == pytest.approx(expected)
    recount = count_tokens(str(corpus),
                           vocab=Vocabulary(str(tmp_path / "v.txt")))
    assert recount["unigram_perplexity"] == pytest.approx(expected)
