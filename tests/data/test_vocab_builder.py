"""build_vocab and bin/build_vocab.py: order, limits, sidecar, bad input."""

import json
import pathlib

import pytest
from helpers import load_bin_script

from bilm_keras.data import Vocabulary
from bilm_keras.data.corpus import CorpusError
from bilm_keras.data.vocab_builder import build_vocab, read_vocab_stats

# counts: the 4, . 3, a 3, cat 2, sat 2, dog 1, ran 1; first occurrence
# order: the cat sat . a dog ran
SHARD_0 = "the cat sat .\na dog ran .\n\n"
SHARD_1 = "the a cat\n   \nthe sat a the .\n"


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "s0.txt").write_text(SHARD_0)
    (tmp_path / "train" / "s1.txt").write_text(SHARD_1)
    return str(tmp_path / "train" / "*.txt")


def lines(path):
    return pathlib.Path(path).read_text(encoding="utf-8").splitlines()


def test_order_and_stats(corpus, tmp_path):
    out = tmp_path / "out" / "vocab.txt"
    stats = build_vocab(corpus, str(out))
    # descending count; ties (./a at 3, cat/sat at 2, dog/ran at 1) in
    # order of first occurrence over the sorted files
    assert lines(out) == ["<S>", "</S>", "<UNK>", "the", ".", "a", "cat",
                          "sat", "dog", "ran"]
    assert stats["n_train_tokens"] == 16
    assert stats["n_sentences"] == 4
    assert stats["n_skipped_lines"] == 2
    assert stats["n_types"] == 7
    assert stats["n_tokens_vocab"] == 10
    assert stats["n_oov_tokens"] == 0
    assert read_vocab_stats(out) == json.loads(
        (tmp_path / "out" / "vocab.txt.json").read_text())
    assert read_vocab_stats(out)["n_train_tokens"] == 16
    assert read_vocab_stats(out)["train_prefix"] == corpus
    # the result is a valid training vocabulary
    vocab = Vocabulary(str(out), validate_file=True)
    assert (vocab.bos, vocab.eos, vocab.unk) == (0, 1, 2)
    # no temporary files left behind
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "vocab.txt", "vocab.txt.json"]


def test_min_count_and_max_size(corpus, tmp_path):
    stats = build_vocab(corpus, str(tmp_path / "v2.txt"), min_count=2)
    assert lines(tmp_path / "v2.txt")[3:] == ["the", ".", "a", "cat", "sat"]
    assert stats["n_oov_tokens"] == 2  # dog, ran
    stats = build_vocab(corpus, str(tmp_path / "v3.txt"), max_size=5)
    assert lines(tmp_path / "v3.txt") == ["<S>", "</S>", "<UNK>", "the", "."]
    assert stats["n_oov_tokens"] == 16 - 4 - 3
    assert stats["n_tokens_vocab"] == 5


def test_special_tokens_in_corpus_not_duplicated(tmp_path):
    (tmp_path / "c.txt").write_text("<UNK> x x <S>\n")
    build_vocab(str(tmp_path / "c.txt"), str(tmp_path / "v.txt"))
    assert lines(tmp_path / "v.txt") == ["<S>", "</S>", "<UNK>", "x"]


def test_bad_input(tmp_path, corpus):
    with pytest.raises(CorpusError, match=r"missing/\*: no corpus file"):
        build_vocab(str(tmp_path / "missing" / "*"), str(tmp_path / "v.txt"))
    with pytest.raises(ValueError, match="min_count: expected an integer >= 1, "
                                         "found 0"):
        build_vocab(corpus, str(tmp_path / "v.txt"), min_count=0)
    with pytest.raises(ValueError, match="max_size: expected None or an int "
                                         ">= 3.*found 2"):
        build_vocab(corpus, str(tmp_path / "v.txt"), max_size=2)
    (tmp_path / "bad.txt").write_bytes(b"ok line\nbad \xff\xfe line\n")
    (tmp_path / "v.txt").write_text("previous\n")
    with pytest.raises(CorpusError, match=r"bad.txt, line 2: not valid "
                                          r"UTF-8"):
        build_vocab(str(tmp_path / "bad.txt"), str(tmp_path / "v.txt"))
    # a failed build leaves the previous file untouched and no temp files
    assert lines(tmp_path / "v.txt") == ["previous"]
    assert not list(tmp_path.glob("*.tmp"))


def test_bin_build_vocab(corpus, tmp_path, capsys):
    script = load_bin_script("build_vocab.py")
    out = str(tmp_path / "vocab.txt")
    stats = script.main(["--train_prefix", corpus, "--vocab_file", out,
                         "--min_count", "2", "--max_size", "7"])
    assert lines(out) == ["<S>", "</S>", "<UNK>", "the", ".", "a", "cat"]
    assert stats["n_train_tokens"] == 16
    assert "n_train_tokens=16" in capsys.readouterr().out
