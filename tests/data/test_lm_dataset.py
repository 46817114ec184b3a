"""LMDataset / BidirectionalLMDataset: batching, test mode, shuffling,
sharding, tf.data and bad input.

Expected batches are worked out by hand below from bilm-tf's ``_get_batch``
rules, never produced by the code under test.
"""

import collections
import logging

import numpy as np
import pytest

from bilm_keras.data import UnicodeCharsVocabulary, Vocabulary
from bilm_keras.data.batch_packing import get_batches
from bilm_keras.data.corpus import CorpusError, count_tokens
from bilm_keras.data.lm_dataset import BidirectionalLMDataset, LMDataset
from bilm_keras.data.tf_dataset import lm_dataset_fn, make_tf_dataset
from bilm_keras.data.vocabulary import VocabularyError

# ids: <S>=0 </S>=1 <UNK>=2 a=3 b=4 c=5
VOCAB = ["<S>", "</S>", "<UNK>", "a", "b", "c"]
# two blank lines (one empty, one only whitespace) are skipped; "zz" is OOV
CORPUS = "a b c\n\nc zz\n \t \nb\n"


@pytest.fixture
def tiny(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "corpus.txt").write_text(CORPUS)
    return tmp_path


def token_vocab(path):
    return Vocabulary(str(path / "vocab.txt"), validate_file=True)


def char_vocab(path, max_characters_per_token=5):
    return UnicodeCharsVocabulary(str(path / "vocab.txt"),
                                  max_characters_per_token,
                                  validate_file=True)


# Sentences as ids:  s1 = <S> a b c </S> = [0 3 4 5 1]
#                    s2 = <S> c zz </S>  = [0 5 2 1]
#                    s3 = <S> b </S>     = [0 4 1]
# batch_size=2, num_steps=3:
#   batch 1: row 0 starts s1 (in 0 3 4 -> tgt 3 4 5); row 1 takes s2
#            (in 0 5 2 -> tgt 5 2 1).
#   batch 2: row 0 finishes s1 (in 5 -> tgt 1) then starts s3 (in 0 4 ->
#            tgt 4 1); row 1 asks for a sentence, the corpus is done: padding.
FORWARD = [
    dict(token_ids=[[0, 3, 4], [0, 5, 2]],
         next_token_id=[[3, 4, 5], [5, 2, 1]],
         mask=[[1, 1, 1], [1, 1, 1]]),
    dict(token_ids=[[5, 0, 4], [-1, -1, -1]],
         next_token_id=[[1, 4, 1], [0, 0, 0]],
         mask=[[1, 1, 1], [0, 0, 0]]),
]
# Reversed: s1 = </S> c b a <S> = [1 5 4 3 0], s2 = [1 2 5 0], s3 = [1 4 0]
BACKWARD = [
    dict(token_ids=[[1, 5, 4], [1, 2, 5]],
         next_token_id=[[5, 4, 3], [2, 5, 0]],
         mask=[[1, 1, 1], [1, 1, 1]]),
    dict(token_ids=[[3, 1, 4], [-1, -1, -1]],
         next_token_id=[[0, 4, 0], [0, 0, 0]],
         mask=[[1, 1, 1], [0, 0, 0]]),
]


def check_batch(batch, expected, suffix=""):
    # inputs are vocab id + 1 (0 = padding, written -1 + 1 above)
    np.testing.assert_array_equal(
        batch["token_ids" + suffix], np.array(expected["token_ids"]) + 1)
    np.testing.assert_array_equal(
        batch["next_token_id" + suffix], expected["next_token_id"])
    np.testing.assert_array_equal(batch["mask" + suffix], expected["mask"])
    assert batch["token_ids" + suffix].dtype == np.int32
    assert batch["next_token_id" + suffix].dtype == np.int32
    assert batch["mask" + suffix].dtype == np.float32


@pytest.mark.parametrize("reverse", [False, True])
def test_test_mode_batches_by_hand(tiny, reverse):
    data = LMDataset(str(tiny / "corpus.txt"), token_vocab(tiny),
                     reverse=reverse, test=True)
    batches = list(data.iter_batches(batch_size=2, num_steps=3))
    expected = BACKWARD if reverse else FORWARD
    assert len(batches) == len(expected)
    for batch, exp in zip(batches, expected):
        assert sorted(batch) == ["mask", "next_token_id", "sentence_start",
                                 "token_ids"]
        check_batch(batch, exp)
        # a sentence starts where its first input (<S>, </S> backward) is
        first = token_vocab(tiny).eos if reverse else token_vocab(tiny).bos
        np.testing.assert_array_equal(batch["sentence_start"],
                                      batch["token_ids"] == first + 1)
    assert data.n_skipped_lines == 2


def test_bilm_tf_drops_incomplete_batch_without_drain(tiny):
    data = LMDataset(str(tiny / "corpus.txt"), token_vocab(tiny), test=True)
    batches = list(get_batches(data.iter_encoded(), 2, 3, None, drain=False))
    assert len(batches) == 1
    check_batch(batches[0], FORWARD[0])


def test_training_stream_cycles_and_continues_rows(tiny):
    data = LMDataset(str(tiny / "corpus.txt"), token_vocab(tiny))
    batches = data.iter_batches(batch_size=1, num_steps=4)
    # one row: the stream s1 s2 s3 s1 ... in 4-token windows
    stream_in = [0, 3, 4, 5, 0, 5, 2, 0, 4, 0, 3, 4, 5, 0, 5, 2]
    stream_tgt = [3, 4, 5, 1, 5, 2, 1, 4, 1, 3, 4, 5, 1, 5, 2, 1]
    for k in range(4):
        b = next(batches)
        np.testing.assert_array_equal(
            b["token_ids"][0], np.array(stream_in[4 * k: 4 * k + 4]) + 1)
        np.testing.assert_array_equal(
            b["next_token_id"][0], stream_tgt[4 * k: 4 * k + 4])
        np.testing.assert_array_equal(b["mask"], np.ones((1, 4)))
        np.testing.assert_array_equal(
            b["sentence_start"][0],
            np.array(stream_in[4 * k: 4 * k + 4]) == 0)


def test_char_inputs_shifted_and_padded(tiny):
    data = LMDataset(str(tiny / "corpus.txt"), char_vocab(tiny), test=True)
    b1, b2 = list(data.iter_batches(batch_size=2, num_steps=3))
    chars = b1["tokens_characters"]
    assert chars.shape == (2, 3, 5) and chars.dtype == np.int32
    # char ids + 1: BOW 258 -> 259, EOW 259 -> 260, pad 260 -> 261,
    # BOS 256 -> 257; "a" = byte 97 -> 98, "z" = 122 -> 123
    np.testing.assert_array_equal(chars[0, 0], [259, 257, 260, 261, 261])
    np.testing.assert_array_equal(chars[0, 1], [259, 98, 260, 261, 261])
    # OOV tokens keep their spelling in char ids
    np.testing.assert_array_equal(chars[1, 2], [259, 123, 123, 260, 261])
    # padding positions are all 0
    np.testing.assert_array_equal(b2["tokens_characters"][1], 0)
    # "c" (byte 99) starts batch 2 of row 0
    np.testing.assert_array_equal(
        b2["tokens_characters"][0, 0], [259, 100, 260, 261, 261])


def test_bidirectional_keys_and_values(tiny):
    data = BidirectionalLMDataset(str(tiny / "corpus.txt"), char_vocab(tiny),
                                  test=True)
    batches = list(data.iter_batches(batch_size=2, num_steps=3))
    assert sorted(batches[0]) == sorted(
        k + s for k in ("token_ids", "tokens_characters", "next_token_id",
                        "mask", "sentence_start") for s in ("", "_reverse"))
    for batch, fwd, bwd in zip(batches, FORWARD, BACKWARD):
        check_batch(batch, fwd)
        check_batch(batch, bwd, suffix="_reverse")
    # </S> chars (EOS 257 -> 258) open the reversed stream
    np.testing.assert_array_equal(batches[0]["tokens_characters_reverse"][
        0, 0], [259, 258, 260, 261, 261])
    assert data.n_skipped_lines == 2


def write_corpus(folder, n_files, n_sentences, seed=0):
    """Random sentences over a 20-word vocabulary; returns the files'
    sentences (as token lists) and the vocabulary path."""
    rng = np.random.RandomState(seed)
    words = [f"w{i}" for i in range(20)]
    (folder / "vocab.txt").write_text(
        "\n".join(["<S>", "</S>", "<UNK>"] + words[:15]) + "\n")
    sentences = []
    for f in range(n_files):
        lines = []
        for _ in range(n_sentences):
            # OOV w15..w19 included; lengths 1..12
            lines.append([words[i] for i in
                          rng.randint(0, 20, size=rng.randint(1, 13))])
        sentences += lines
        (folder / f"shard_{f}.txt").write_text(
            "\n".join(" ".join(s) for s in lines) + "\n\n")
    return sentences, str(folder / "vocab.txt")


def target_counts(batches, suffix=""):
    c = collections.Counter()
    for b in batches:
        m = b["mask" + suffix] > 0
        c.update(b["next_token_id" + suffix][m].tolist())
        # padding is exactly where the mask is 0
        assert np.all(b["token_ids" + suffix][~m] == 0)
        assert np.all(b["token_ids" + suffix][m] > 0)
    return c


def expected_target_counts(sentences, vocab, reverse=False):
    c = collections.Counter()
    for s in sentences:
        ids = [vocab.word_to_id(w) for w in s]
        c.update(ids + [vocab.bos if reverse else vocab.eos])
    return c


@pytest.mark.parametrize("batch_size,num_steps", [(1, 7), (3, 5), (8, 20)])
def test_test_mode_sees_every_target_once(tmp_path, batch_size, num_steps):
    sentences, vocab_file = write_corpus(tmp_path, 3, 17)
    vocab = Vocabulary(vocab_file, validate_file=True)
    pattern = str(tmp_path / "shard_*.txt")
    data = BidirectionalLMDataset(pattern, vocab, test=True)
    batches = list(data.iter_batches(batch_size, num_steps))
    n = count_tokens(pattern)
    assert n == dict(n_tokens=sum(map(len, sentences)), n_sentences=51,
                     n_skipped_lines=3, n_files=3)
    for suffix, reverse in (("", False), ("_reverse", True)):
        # each sentence of n tokens gives n + 1 targets
        assert sum(b["mask" + suffix].sum() for b in batches) == (
            n["n_tokens"] + n["n_sentences"])
        assert target_counts(batches, suffix) == expected_target_counts(
            sentences, vocab, reverse)
    # a new pass gives the same batches
    again = list(data.iter_batches(batch_size, num_steps))
    assert len(again) == len(batches)
    for a, b in zip(again, batches):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def row_sentences(batches, bos_input):
    """Sentences (as input-id tuples) of batch row 0 read back across
    windows: a sentence starts at every <S> input."""
    stream = np.concatenate([b["token_ids"][0] for b in batches]).tolist()
    out, cur = [], None
    for tok in stream:
        if tok == bos_input:
            if cur is not None:
                out.append(tuple(cur))
            cur = []
        elif tok != 0:  # 0: padding at the end of a test-mode stream
            cur.append(tok)
    if cur:
        out.append(tuple(cur))
    return out


def test_training_shuffle_is_seeded_and_covers_the_corpus(tmp_path):
    sentences, vocab_file = write_corpus(tmp_path, 3, 10)
    vocab = Vocabulary(vocab_file, validate_file=True)
    pattern = str(tmp_path / "shard_*.txt")

    def first_batches(seed, n=40):
        data = LMDataset(pattern, vocab, shuffle_on_load=True, seed=seed)
        it = data.iter_batches(batch_size=1, num_steps=10)
        return [next(it) for _ in range(n)]

    a, b, c = first_batches(1), first_batches(1), first_batches(2)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x["token_ids"], y["token_ids"])
    assert any(not np.array_equal(x["token_ids"], y["token_ids"])
               for x, y in zip(a, c))
    # the first 30 sentences of the single row are one pass over the 30
    # sentences of the corpus (every shard once), in shuffled order
    got = row_sentences(a, bos_input=vocab.bos + 1)[:30]
    want = [tuple(vocab.word_to_id(w) + 1 for w in s) for s in sentences]
    assert sorted(got) == sorted(want)
    assert got != want


def test_sharding_by_files_and_by_sentences(tmp_path):
    sentences, vocab_file = write_corpus(tmp_path, 4, 6)
    vocab = Vocabulary(vocab_file, validate_file=True)
    pattern = str(tmp_path / "shard_*.txt")
    # 4 files, 2 pipelines: disjoint files
    parts = [LMDataset(pattern, vocab, test=True, shard_index=i,
                       num_shards=2).shards for i in range(2)]
    assert not set(parts[0]) & set(parts[1])
    assert sorted(parts[0] + parts[1]) == sorted(
        str(tmp_path / f"shard_{i}.txt") for i in range(4))
    # 4 files, 5 pipelines: every file, a disjoint share of each file's
    # sentences
    total = collections.Counter()
    seen = []
    for i in range(5):
        data = LMDataset(pattern, vocab, test=True, shard_index=i,
                         num_shards=5)
        assert sorted(data.shards) == sorted(parts[0] + parts[1])
        batches = list(data.iter_batches(1, 200))
        total += target_counts(batches)
        seen.append(set(row_sentences(batches, vocab.bos + 1)))
    assert total == expected_target_counts(sentences, vocab)
    for i in range(5):
        for j in range(i + 1, 5):
            assert not seen[i] & seen[j]


def test_tf_dataset_skips_the_first_batches(tmp_path):
    # a resumed run's stream: the same seed, the first batches passed over
    _, vocab_file = write_corpus(tmp_path, 3, 10)
    vocab = Vocabulary(vocab_file, validate_file=True)
    pattern = str(tmp_path / "shard_*.txt")

    def batches(skip, n):
        data = BidirectionalLMDataset(pattern, vocab, shuffle_on_load=True,
                                      seed=5)
        ds = make_tf_dataset(data, 2, 4, skip_batches=skip)
        return [b["token_ids_reverse"].numpy() for b in ds.take(n)]

    whole, resumed = batches(0, 12), batches(7, 5)
    for x, y in zip(whole[7:], resumed):
        np.testing.assert_array_equal(x, y)


def test_tf_dataset_signature_and_values(tiny):
    import tensorflow as tf

    data = BidirectionalLMDataset(str(tiny / "corpus.txt"), char_vocab(tiny),
                                  test=True)
    ds = make_tf_dataset(data, batch_size=2, num_steps=3)
    spec = ds.element_spec
    assert spec["token_ids"] == tf.TensorSpec((2, 3), tf.int32)
    assert spec["tokens_characters_reverse"] == tf.TensorSpec((2, 3, 5),
                                                              tf.int32)
    assert spec["next_token_id"] == tf.TensorSpec((2, 3), tf.int32)
    assert spec["mask_reverse"] == tf.TensorSpec((2, 3), tf.float32)
    got = [{k: v.numpy() for k, v in b.items()} for b in ds]
    assert len(got) == 2
    for batch, fwd, bwd in zip(got, FORWARD, BACKWARD):
        check_batch(batch, fwd)
        check_batch(batch, bwd, suffix="_reverse")
    # token-only vocabulary: no tokens_characters key
    ds = make_tf_dataset(LMDataset(str(tiny / "corpus.txt"),
                                   token_vocab(tiny), test=True), 2, 3)
    assert sorted(ds.element_spec) == ["mask", "next_token_id",
                                       "sentence_start", "token_ids"]


def test_lm_dataset_fn_gives_disjoint_pipelines(tmp_path):
    import tensorflow as tf

    sentences, vocab_file = write_corpus(tmp_path, 2, 9)
    vocab = Vocabulary(vocab_file, validate_file=True)
    fn = lm_dataset_fn(str(tmp_path / "shard_*.txt"), vocab,
                       global_batch_size=4, num_steps=6, test=True)
    total_f = collections.Counter()
    total_b = collections.Counter()
    for i in range(2):
        ctx = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=i,
                                         num_replicas_in_sync=2)
        ds = fn(ctx)
        assert ds.element_spec["token_ids"].shape == (2, 6)
        batches = [{k: v.numpy() for k, v in b.items()} for b in ds]
        total_f += target_counts(batches)
        total_b += target_counts(batches, "_reverse")
    assert total_f == expected_target_counts(sentences, vocab)
    assert total_b == expected_target_counts(sentences, vocab, reverse=True)


def test_count_tokens_by_hand(tiny):
    assert count_tokens(str(tiny / "corpus.txt")) == dict(
        n_tokens=6, n_sentences=3, n_skipped_lines=2, n_files=1)


def test_fixture_corpus_test_mode(train_dir):
    vocab = UnicodeCharsVocabulary(str(train_dir / "vocab.txt"), 50,
                                   validate_file=True)
    data = BidirectionalLMDataset(str(train_dir / "data.txt"), vocab,
                                  test=True)
    batches = list(data.iter_batches(batch_size=4, num_steps=10))
    n = count_tokens(str(train_dir / "data.txt"))
    assert (n["n_tokens"], n["n_sentences"]) == (134, 5)
    for suffix in ("", "_reverse"):
        assert sum(b["mask" + suffix].sum() for b in batches) == 139
    # the fixture vocabulary has 32 of the corpus words: the rest is <UNK>
    assert any((b["next_token_id"] == vocab.unk).any() for b in batches)


# -- bad input --------------------------------------------------------------

def test_missing_and_empty_glob(tiny):
    vocab = token_vocab(tiny)
    with pytest.raises(CorpusError, match=r"nope/\*\.txt: no corpus file"):
        LMDataset(str(tiny / "nope" / "*.txt"), vocab)
    (tiny / "empty").mkdir()
    with pytest.raises(CorpusError, match=r"empty/\*: no corpus file"):
        BidirectionalLMDataset(str(tiny / "empty" / "*"), vocab)
    with pytest.raises(CorpusError, match="no corpus file"):
        count_tokens(str(tiny / "empty" / "*"))
    with pytest.raises(CorpusError, match="expected a glob"):
        LMDataset("", vocab)


def test_vocab_without_special_tokens(tiny):
    (tiny / "bad_vocab.txt").write_text("<S>\n</S>\na\nb\n")
    vocab = Vocabulary(str(tiny / "bad_vocab.txt"))
    with pytest.raises(VocabularyError, match=r"bad_vocab.txt.*missing: "
                                              r"<UNK>"):
        LMDataset(str(tiny / "corpus.txt"), vocab)


def test_blank_lines_logged_once_per_shard(tiny, caplog):
    data = LMDataset(str(tiny / "corpus.txt"), token_vocab(tiny))
    with caplog.at_level(logging.WARNING, logger="bilm_keras.data"):
        it = data.iter_batches(1, 5)
        for _ in range(10):  # several passes over the shard
            next(it)
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING]
    assert warnings == [f"{tiny / 'corpus.txt'}: skipped 2 empty or "
                        "whitespace-only line(s)"]
    assert data.n_skipped_lines == 2
    assert data.skipped_lines == {str(tiny / "corpus.txt"): 2}


def test_all_blank_corpus(tiny):
    (tiny / "blank.txt").write_text("\n  \n\t\n")
    for test in (False, True):
        data = LMDataset(str(tiny / "blank.txt"), token_vocab(tiny),
                         test=test)
        with pytest.raises(CorpusError, match=r"blank.txt: no sentence"):
            next(data.iter_batches(2, 3))


def test_invalid_utf8_names_file_and_line(tiny):
    (tiny / "latin1.txt").write_bytes("a b\nc caf\xe9 b\n".encode("latin-1"))
    data = LMDataset(str(tiny / "latin1.txt"), token_vocab(tiny), test=True)
    with pytest.raises(CorpusError, match=r"latin1.txt, line 2: not valid "
                                          r"UTF-8"):
        list(data.iter_batches(2, 3))
    with pytest.raises(CorpusError, match=r"latin1.txt, line 2"):
        count_tokens(str(tiny / "latin1.txt"))


def test_bad_arguments(tiny):
    vocab = token_vocab(tiny)
    with pytest.raises(ValueError, match="shard_index: expected an integer in "
                                         r"0\.\.1, found 2"):
        LMDataset(str(tiny / "corpus.txt"), vocab, shard_index=2,
                  num_shards=2)
    data = LMDataset(str(tiny / "corpus.txt"), vocab)
    with pytest.raises(ValueError, match="batch_size: expected an integer "
                                         ">= 1, found 0"):
        next(data.iter_batches(0, 3))
    with pytest.raises(TypeError, match="vocab: expected a Vocabulary"):
        LMDataset(str(tiny / "corpus.txt"), "vocab.txt")


def test_chinese_corpus_char_ids(tmp_path):
    from bilm_keras.data.vocab_builder import build_vocab

    (tmp_path / "zh.txt").write_text(
        "我 爱 北京 天安门\n北京 是 首都\n\n我 是 学生\n", encoding="utf-8")
    stats = build_vocab(str(tmp_path / "zh.txt"), str(tmp_path / "v.txt"))
    assert stats["n_train_tokens"] == 10
    vocab = UnicodeCharsVocabulary(str(tmp_path / "v.txt"), 8,
                                   validate_file=True)
    # descending count, ties in order of first occurrence
    assert [vocab.id_to_word(i) for i in range(3, 10)] == [
        "我", "北京", "是", "爱", "天安门", "首都", "学生"]
    data = LMDataset(str(tmp_path / "zh.txt"), vocab, test=True)
    (batch,) = list(data.iter_batches(batch_size=1, num_steps=13))
    np.testing.assert_array_equal(batch["next_token_id"][0],
                                  [3, 6, 4, 7, 1, 4, 5, 8, 1, 3, 5, 9, 1])
    # "北京" is 6 UTF-8 bytes e5 8c 97 e4 ba ac, all fit in 8 - 2 slots
    want = np.array([258, 0xE5, 0x8C, 0x97, 0xE4, 0xBA, 0xAC, 259]) + 1
    np.testing.assert_array_equal(batch["tokens_characters"][0, 3], want)
    # "天安门" is 9 bytes, cut to the first 6
    want = np.array([258, 0xE5, 0xA4, 0xA9, 0xE5, 0xAE, 0x89, 259]) + 1
    np.testing.assert_array_equal(batch["tokens_characters"][0, 4], want)
    np.testing.assert_array_equal(batch["mask"], 1.0)
    assert data.n_skipped_lines == 1


def test_char_ids_match_vocabulary_encode_chars(tmp_path):
    # the dataset's vectorized char ids against the vocabulary's own
    # encode_chars (the Batcher's reference path), OOV and specials included
    (tmp_path / "v.txt").write_text("<S>\n</S>\n<UNK>\nthe\n北京\n",
                                   encoding="utf-8")
    text = "the 北京 unknownword <UNK> <S> 天安门 x\nthe\n"
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    vocab = UnicodeCharsVocabulary(str(tmp_path / "v.txt"), 7,
                                   validate_file=True)
    for reverse in (False, True):
        data = LMDataset(str(tmp_path / "c.txt"), vocab, reverse=reverse,
                         test=True)
        got = [chars for _, chars in data.iter_encoded()]
        for line, chars in zip(text.splitlines(), got):
            words = line.split()[::-1] if reverse else line.split()
            np.testing.assert_array_equal(
                chars, vocab.encode_chars(words, reverse, split=False))


DISTRIBUTE_CHECK = """
import sys
import numpy as np
import tensorflow as tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
from bilm_keras.data import LMDataset, Vocabulary, make_tf_dataset
folder = sys.argv[1]
vocab = Vocabulary(folder + "/vocab.txt", validate_file=True)
data = LMDataset(folder + "/shard_*.txt", vocab, test=True)
ds = make_tf_dataset(data, batch_size=4, num_steps=5)
reference = [b["token_ids"].numpy() for b in ds]
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
n = 0
for k, batch in enumerate(strategy.experimental_distribute_dataset(ds)):
    parts = strategy.experimental_local_results(batch["token_ids"])
    np.testing.assert_array_equal(parts[0].numpy(), reference[k][:2])
    np.testing.assert_array_equal(parts[1].numpy(), reference[k][2:])
    n += 1
assert n == len(reference) > 3, (n, len(reference))
print("rows kept", n)
"""


@pytest.mark.slow
def test_mirrored_strategy_keeps_rows_on_their_replica(tmp_path):
    # the claim of make_tf_dataset's docstring: experimental_distribute_
    # dataset splits each global batch by rows, in order, so every replica
    # always gets the same rows (run in its own process, a child of the
    # command server, which started no TensorFlow runtime: logical
    # devices must be set before TensorFlow starts)
    import os
    import subprocess

    from helpers import python_argv

    write_corpus(tmp_path, 2, 10)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        python_argv(env) + ["-c", DISTRIBUTE_CHECK, str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rows kept" in result.stdout
