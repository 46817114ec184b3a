"""bilm-tf's heldout stream (``run_test.py``): lines as its text-mode
``readlines()`` gave them, files in its order, batches with states carried
and the last incomplete one dropped."""

import glob
import json
import pathlib

import numpy as np
import pytest

from bilm_keras.data.bilm_tf_heldout import (
    bilm_tf_shard_order,
    iter_bilm_tf_heldout_batches,
    read_bilm_tf_lines,
)
from bilm_keras.data.corpus import CorpusError
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary, Vocabulary

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"


def test_lines_as_python_text_mode_reads_them(tmp_path):
    path = tmp_path / "heldout.txt"
    path.write_bytes("a b\r\n\nc\rd é\n  \ne".encode("utf-8"))
    with open(path, encoding="utf-8") as f:  # bilm-tf's f.readlines()
        expected = [line.rstrip("\n") for line in f.readlines()]
    assert list(read_bilm_tf_lines(str(path))) == expected
    assert expected == ["a b", "", "c", "d é", "  ", "e"]


def test_files_in_bilm_tfs_order(tmp_path):
    for name in ("b.txt", "a.txt", "c.txt"):
        (tmp_path / name).write_text("x\n")
    pattern = str(tmp_path / "*.txt")
    # glob's list, popped from its end
    assert bilm_tf_shard_order(pattern) == glob.glob(pattern)[::-1]
    with pytest.raises(CorpusError, match=r"nothing\*: no heldout file"):
        bilm_tf_shard_order(str(tmp_path / "nothing*"))


def _fixture_vocab():
    return UnicodeCharsVocabulary(str(RUN / "vocab.txt"), 50,
                                  validate_file=True)


def test_batch_size_one_is_the_whole_stream():
    # one row reads every sentence in turn, blank lines too (<S> -> </S>)
    vocab = _fixture_vocab()
    lines = (RUN / "heldout.txt").read_text("utf-8").splitlines()
    assert "" in lines
    batches = list(iter_bilm_tf_heldout_batches(
        str(RUN / "heldout.txt"), vocab, 1))
    for suffix, reverse in (("", False), ("_reverse", True)):
        ids = [vocab.encode(line.split()[::-1] if reverse else line.split(),
                            reverse, split=False) for line in lines]
        inputs = np.concatenate([s[:-1] for s in ids]) + 1
        targets = np.concatenate([s[1:] for s in ids])
        got = np.concatenate([b["token_ids" + suffix] for b in batches], 1)
        assert np.array_equal(got[0], inputs)
        got = np.concatenate([b["next_token_id" + suffix] for b in batches],
                             1)
        assert np.array_equal(got[0], targets)
        first = batches[0]["tokens_characters" + suffix][0, 0]
        assert np.array_equal(first, (vocab.eos_chars if reverse
                                      else vocab.bos_chars) + 1)
    assert len(batches) == sum(len(line.split()) + 1 for line in lines)
    assert all(b["mask"].all() and b["mask_reverse"].all() for b in batches)
    assert not any(k.startswith("sentence_start") for k in batches[0])


def test_as_many_batches_as_bilm_tf_ran():
    recorded = json.loads((RUN / "perplexities.json").read_text())
    vocab = _fixture_vocab()
    for batch_size, record in recorded["by_batch_size"].items():
        batches = list(iter_bilm_tf_heldout_batches(
            str(RUN / "heldout.txt"), vocab, int(batch_size)))
        assert len(batches) == record["n_batches"]
        assert batches[0]["token_ids"].shape == (int(batch_size), 1)


def test_last_incomplete_batch_dropped(tmp_path):
    path = tmp_path / "heldout.txt"
    path.write_text("a b c\nd\n")  # 4 + 2 predictions per direction
    vocab = Vocabulary(str(RUN / "vocab.txt"), validate_file=True)
    batches = list(iter_bilm_tf_heldout_batches(str(path), vocab, 4))
    # row 0 takes sentence 1, row 1 sentence 2, rows 2-3 find no more
    assert batches == []
    batches = list(iter_bilm_tf_heldout_batches(str(path), vocab, 2))
    # rows: [a b c </S>] and [d </S>, then nothing]: 2 full batches
    assert len(batches) == 2
    assert "tokens_characters" not in batches[0]
    batches = list(iter_bilm_tf_heldout_batches(str(path), vocab, 2,
                                                bidirectional=False))
    assert len(batches) == 2 and "token_ids_reverse" not in batches[0]
