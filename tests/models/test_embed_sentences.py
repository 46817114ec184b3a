"""``embed_sentences``'s fast path (distinct tokens embedded once, sorted
batches, LSTMs only on gathered embeddings) against the plain padded call
on the fixture model and against the numpy reference on random weights."""

import copy
import json

import h5py
import numpy as np
import pytest

import numpy_reference as nr
from helpers import write_model_files
from bilm_keras import Batcher, BidirectionalLanguageModel

OPTIONS = {
    "lstm": {"cell_clip": 3, "use_skip_connections": True, "n_layers": 2,
             "proj_clip": 3, "projection_dim": 8, "dim": 24},
    "char_cnn": {"embedding": {"dim": 4},
                 "filters": [[1, 4], [2, 8], [3, 8]], "n_highway": 2,
                 "n_characters": 261, "max_characters_per_token": 20,
                 "activation": "relu"},
}

# repeated tokens, an empty sentence, literal boundary tokens, long tokens,
# several lengths so that sorting reorders them
SENTENCES = [
    "the quick brown fox jumps over the lazy dog".split(),
    [],
    "the fox".split(),
    "深度 上下文 词 表示 ！ the".split(),
    ["<S>", "x", "</S>"],
    ["a-very-long-token-that-exceeds-the-character-limit-by-far"] * 3,
    "a b".split(),
    "dog".split(),
    "the lazy dog jumps over the quick brown fox again".split(),
]


def _fixture_sentences(model_dir):
    with open(model_dir / "lm_embeddings_sentences.json") as f:
        raw = json.load(f)
    return [s.split() for column in raw for s in column]


@pytest.mark.parametrize("batch_size", [1, 4, 64])
def test_fixture_model_equals_padded_call(model_dir, batch_size):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    sentences = _fixture_sentences(model_dir)[:12] + SENTENCES
    batcher = Batcher(str(model_dir / "vocab_test.txt"), 50)
    got = model.embed_sentences(sentences, batch_size=batch_size,
                                vocab_file=str(model_dir / "vocab_test.txt"))
    assert len(got) == len(sentences)
    # the plain way: given order, padded batches of 5
    for start in range(0, len(sentences), 5):
        batch = sentences[start: start + 5]
        ref = model(batcher.batch_sentences(batch))["lm_embeddings"].numpy()
        for k, sentence in enumerate(batch):
            emb = got[start + k]
            assert emb.dtype == np.float32
            assert emb.shape == (3, len(sentence), 32)
            np.testing.assert_allclose(emb, ref[k, :, : len(sentence)],
                                       atol=1e-5)


def test_fixture_matches_bilm_tf_reference(model_dir):
    # stateless first batch of the bilm-tf fixture: rows start from zeros
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    with open(model_dir / "lm_embeddings_sentences.json") as f:
        raw = json.load(f)
    sentences = [raw[k][0].split() for k in range(3)]
    got = model.embed_sentences(sentences, batch_size=2)
    for k in range(3):
        with h5py.File(model_dir / f"lm_embeddings_{k}.hdf5", "r") as f:
            ref = f["0"][...]  # (2, n_tokens, 32): forward, backward top
        top = np.concatenate([ref[0], ref[1]], axis=-1)
        np.testing.assert_allclose(got[k][2], top, atol=1e-5)


def test_stateful_model_states_untouched(model_dir):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5",
                                       stateful=True, max_batch_size=4)
    stateless = BidirectionalLanguageModel(model_dir / "options.json",
                                           model_dir / "lm_weights.hdf5")
    batcher = Batcher(None, 50)
    model(batcher.batch_sentences([["a", "b"], ["c"]]))
    before = [v.numpy() for layers in model.states.values()
              for pair in layers for v in pair]
    got = model.embed_sentences(SENTENCES, batch_size=3)
    want = stateless.embed_sentences(SENTENCES, batch_size=5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5)
    after = [v.numpy() for layers in model.states.values()
             for pair in layers for v in pair]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_random_weights_match_numpy(tmp_path, activation):
    options = copy.deepcopy(OPTIONS)
    options["char_cnn"]["activation"] = activation
    weights = nr.random_bilm_weights(options, seed=11)
    model = BidirectionalLanguageModel(
        *write_model_files(tmp_path, options, weights))
    got = model.embed_sentences(SENTENCES, batch_size=3)
    char_ids = nr.sentence_char_ids(SENTENCES, 20)
    ref = nr.bilm_forward(weights, options, char_ids=char_ids)
    expected, lengths = nr.remove_bos_eos(ref["layers"], ref["lengths"])
    for k, sentence in enumerate(SENTENCES):
        assert lengths[k] == len(sentence)
        np.testing.assert_allclose(got[k], expected[k, :, : len(sentence)],
                                   atol=1e-5)


def test_token_input_matches_numpy(tmp_path):
    weights = nr.random_bilm_weights(OPTIONS, seed=12)
    vocab = ["<S>", "</S>", "<UNK>", "the", "fox", "a", "b"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    emb = np.random.default_rng(3).normal(size=(len(vocab), 8))
    emb = emb.astype(np.float32)
    opt, wfile = write_model_files(tmp_path, OPTIONS, weights)
    with h5py.File(tmp_path / "embedding.hdf5", "w") as f:
        f.create_dataset("embedding", data=emb)
    model = BidirectionalLanguageModel(
        opt, wfile, use_character_inputs=False,
        embedding_weight_file=str(tmp_path / "embedding.hdf5"))
    sentences = [["the", "fox", "zzz", "the"], [], ["a"], ["b", "a"]]
    got = model.embed_sentences(sentences, batch_size=2,
                                vocab_file=str(tmp_path / "vocab.txt"))
    ids = nr.sentence_token_ids(sentences, vocab)
    ref = nr.bilm_forward(weights, OPTIONS, token_ids=ids,
                          token_embedding=emb)
    expected, _ = nr.remove_bos_eos(ref["layers"], ref["lengths"])
    for k, sentence in enumerate(sentences):
        np.testing.assert_allclose(got[k], expected[k, :, : len(sentence)],
                                   atol=1e-5)


def test_many_distinct_tokens_cross_chunks(tmp_path):
    # more distinct tokens than one token-embedder call holds
    weights = nr.random_bilm_weights(OPTIONS, seed=13)
    model = BidirectionalLanguageModel(
        *write_model_files(tmp_path, OPTIONS, weights))
    model.embed_chunk_size = 7
    sentences = [[f"w{i}", f"v{i % 5}", "the"] for i in range(12)]
    got = model.embed_sentences(sentences, batch_size=5)
    ref = model(Batcher(None, 20).batch_sentences(sentences))
    ref = ref["lm_embeddings"].numpy()
    for k in range(len(sentences)):
        np.testing.assert_allclose(got[k], ref[k], atol=1e-5)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_batch_size(model_dir, bad):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    with pytest.raises(ValueError, match="batch_size: expected a positive"):
        model.embed_sentences([["a"]], batch_size=bad)


def test_bad_sentences(model_dir):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    with pytest.raises(ValueError, match="at least one sentence"):
        model.embed_sentences([])
    with pytest.raises(TypeError, match=r"sentences\[1\]"):
        model.embed_sentences([["a"], "not a list"])


def test_only_empty_sentences(model_dir):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    got = model.embed_sentences([[], []])
    assert [g.shape for g in got] == [(3, 0, 32), (3, 0, 32)]


def test_long_sentences_cross_input_blocks(tmp_path):
    # 19, 35 and 42 positions with the boundaries: the LSTMs' input
    # contributions come in 2 and 3 blocks of 16 steps (LSTMStack.infer)
    weights = nr.random_bilm_weights(OPTIONS, seed=14)
    model = BidirectionalLanguageModel(
        *write_model_files(tmp_path, OPTIONS, weights))
    words = "the quick brown fox jumps over a lazy dog".split()
    sentences = [[words[(i * k) % len(words)] for i in range(n)]
                 for k, n in ((1, 17), (2, 40), (3, 3), (4, 33))]
    got = model.embed_sentences(sentences, batch_size=2)
    ref = nr.bilm_forward(weights, OPTIONS,
                          char_ids=nr.sentence_char_ids(sentences, 20))
    expected, _ = nr.remove_bos_eos(ref["layers"], ref["lengths"])
    for k, sentence in enumerate(sentences):
        np.testing.assert_allclose(got[k], expected[k, :, : len(sentence)],
                                   atol=1e-5)
