""":class:`BulkEmbedder` (distinct tokens embedded once, sorted batches,
LSTMs only on gathered embeddings), directly and through
``BidirectionalLanguageModel.embed_sentences``, against the plain padded
call on the fixture model and against the numpy reference on random
weights."""

import contextlib
import copy
import json

import h5py
import numpy as np
import tensorflow as tf
import pytest

import numpy_reference as nr
from helpers import write_model_files
from bilm_keras import (
    Batcher,
    BidirectionalLanguageModel,
    BulkEmbedder,
    EmbeddingSpec,
)

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


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 4, 64])
def test_fixture_model_equals_padded_call(model_dir, batch_size,
                                          fixture_model):
    # the session's stateless fixture model: one model (and its traced
    # padded call) for the three batch sizes, not one each
    model = fixture_model
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


def test_fixture_matches_bilm_tf_reference(model_dir, fixture_model):
    # stateless first batch of the bilm-tf fixture: rows start from zeros
    model = fixture_model
    with open(model_dir / "lm_embeddings_sentences.json") as f:
        raw = json.load(f)
    sentences = [raw[k][0].split() for k in range(3)]
    got = model.embed_sentences(sentences, batch_size=2)
    for k in range(3):
        with h5py.File(model_dir / f"lm_embeddings_{k}.hdf5", "r") as f:
            ref = f["0"][...]  # (2, n_tokens, 32): forward, backward top
        top = np.concatenate([ref[0], ref[1]], axis=-1)
        np.testing.assert_allclose(got[k][2], top, atol=1e-5)


@pytest.mark.slow
def test_stateful_model_states_untouched(model_dir, fixture_model):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5",
                                       stateful=True, max_batch_size=4)
    stateless = fixture_model  # the session's, same files
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


@pytest.mark.parametrize("activation", [
    "relu", pytest.param("tanh", marks=pytest.mark.slow)])
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


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
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


@pytest.fixture(scope="module")
def random_model(tmp_path_factory):
    """``(weights, model)``: OPTIONS with random weights, one model (and
    its traced graphs) for the tests below."""
    weights = nr.random_bilm_weights(OPTIONS, seed=13)
    folder = tmp_path_factory.mktemp("random_model")
    return weights, BidirectionalLanguageModel(
        *write_model_files(folder, OPTIONS, weights))


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_many_distinct_tokens_cross_chunks(random_model):
    # more distinct tokens than one token-embedder call holds
    _, model = random_model
    embedder = BulkEmbedder(model.backbone, token_chunk_size=7)
    sentences = [[f"w{i}", f"v{i % 5}", "the"] for i in range(12)]
    got = embedder.embed_sentences(sentences, batch_size=5)
    ref = model(Batcher(None, 20).batch_sentences(sentences))
    ref = ref["lm_embeddings"].numpy()
    for k in range(len(sentences)):
        np.testing.assert_allclose(got[k], ref[k], atol=1e-5)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_batch_size(model_dir, bad):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    with pytest.raises(ValueError,
                       match="batch_size: expected an integer >= 1"):
        model.embed_sentences([["a"]], batch_size=bad)


def test_bad_sentences(model_dir):
    model = BidirectionalLanguageModel(model_dir / "options.json",
                                       model_dir / "lm_weights.hdf5")
    with pytest.raises(TypeError, match=r"sentences\[1\]"):
        model.embed_sentences([["a"], "not a list"])
    with pytest.raises(TypeError, match="expected a list of token lists"):
        model.embed_sentences("a sentence as one string")
    with pytest.raises(TypeError, match="expected an iterable"):
        model.embed_sentences(42)


def test_only_empty_sentences(fixture_model):
    got = fixture_model.embed_sentences([[], []])
    assert [g.shape for g in got] == [(3, 0, 32), (3, 0, 32)]


@pytest.mark.slow
def test_long_sentences_cross_input_blocks(random_model):
    # 19, 35 and 42 positions with the boundaries: the LSTMs' input
    # contributions come in 2 and 3 blocks of 16 steps (LSTMStack.infer)
    weights, model = random_model
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


# ------------------------------------------------------- output choices
@pytest.fixture(scope="module")
def fixture_model(fixture_bilm):
    return fixture_bilm


@pytest.fixture(scope="module")
def all_layers(fixture_model):
    """The ``"all"`` output of SENTENCES, the reference of the others."""
    return fixture_model.embed_sentences(SENTENCES, batch_size=3)


def _numpy_reduction(all_output, output, layers):
    """The other outputs, computed from ``"all"`` in numpy."""
    picked = all_output if layers is None else all_output[layers]
    if output == "all":
        return picked
    if output == "top":
        return all_output[-1]
    average = np.mean(picked, axis=0)  # (n, D)
    if output == "average":
        return average
    if average.shape[0] == 0:
        return np.zeros(average.shape[1], np.float32)
    return np.mean(average, axis=0)  # (D,)


@pytest.mark.parametrize("output,layers,shape", [
    ("all", [2, 0], lambda n: (2, n, 32)),
    ("top", None, lambda n: (n, 32)),
    ("average", None, lambda n: (n, 32)),
    ("average", [1, 2], lambda n: (n, 32)),
    ("sentence_mean", None, lambda n: (32,)),
    ("sentence_mean", [2], lambda n: (32,)),
])
def test_output_choices_reduce_all(fixture_model, all_layers, output,
                                   layers, shape):
    got = fixture_model.embed_sentences(SENTENCES, batch_size=4,
                                        output=output, layers=layers)
    for sentence, g, full in zip(SENTENCES, got, all_layers):
        assert g.dtype == np.float32
        assert g.shape == shape(len(sentence))
        np.testing.assert_allclose(
            g, _numpy_reduction(full, output, layers), atol=1e-6)
    empty = SENTENCES.index([])
    if output == "sentence_mean":  # TF-Hub's default: zeros, not NaN
        np.testing.assert_array_equal(got[empty], np.zeros(32, np.float32))


def test_any_iterable_and_streaming(fixture_model, all_layers):
    # a generator in, the same arrays out, in order
    got = fixture_model.embed_sentences(s for s in SENTENCES)
    for g, w in zip(got, all_layers):
        np.testing.assert_allclose(g, w, atol=1e-6)
    assert fixture_model.embed_sentences([]) == []
    assert fixture_model.embed_sentences(iter([])) == []
    assert list(fixture_model.iter_embeddings([])) == []
    # chunks of 4 of a lazy input: each chunk sorted and embedded alone
    batches = []
    stream = fixture_model.iter_embeddings(
        (s for s in SENTENCES * 2), batch_size=3, chunk_size=4,
        output="average", on_batch=lambda n, t: batches.append((n, t)))
    got = list(stream)
    assert len(got) == 2 * len(SENTENCES)
    for g, full in zip(got, all_layers * 2):
        np.testing.assert_allclose(g, full.mean(axis=0), atol=1e-6)
    # on_batch: every sentence and every token once, batches of <= 3
    assert sum(n for n, _ in batches) == 2 * len(SENTENCES)
    assert sum(t for _, t in batches) == 2 * sum(map(len, SENTENCES))
    assert all(1 <= n <= 3 for n, _ in batches)


def test_iter_embeddings_reports_the_index_in_the_input(fixture_model):
    stream = fixture_model.iter_embeddings(
        [["a"]] * 5 + ["not a list"], chunk_size=2)
    with pytest.raises(TypeError, match=r"^sentences\[5\]: expected a list"):
        list(stream)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"output": "mean"}, ValueError, "output: expected one of 'all', 'top'"),
    ({"layers": [3]}, ValueError, r"layers: expected indices in 0..2, "
                                  r"found \[3\]"),
    ({"layers": []}, ValueError, r"layers: expected indices in 0..2"),
    ({"layers": [True]}, ValueError, r"layers: expected indices"),
    ({"output": "top", "layers": [1]}, ValueError,
     "output 'top' is layer 2; expected no layers"),
])
def test_bad_output_arguments(fixture_model, kwargs, error, match):
    with pytest.raises(error, match=match):
        fixture_model.embed_sentences([["a"]], **kwargs)
    # checked when called, before any sentence is read
    with pytest.raises(error, match=match):
        fixture_model.iter_embeddings(iter([["a"]]), **kwargs)


def test_bad_chunk_size(fixture_model):
    with pytest.raises(ValueError,
                       match="chunk_size: expected an integer >= 1"):
        fixture_model.iter_embeddings([["a"]], chunk_size=0)


# ---------------------------------------------------------- BulkEmbedder
@pytest.fixture(scope="module")
def padded_reference(fixture_model, model_dir):
    """Fixture and SENTENCES sentences with their rows of the padded call
    (given order, batches of 5), each `(3, n_tokens, 32)`."""
    sentences = _fixture_sentences(model_dir)[:6] + SENTENCES
    batcher = Batcher(None, 50)
    expected = []
    for start in range(0, len(sentences), 5):
        batch = sentences[start: start + 5]
        ref = fixture_model(batcher.batch_sentences(batch))["lm_embeddings"]
        expected += [ref[k, :, : len(s)].numpy() for k, s in enumerate(batch)]
    return sentences, expected


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    {},  # the defaults: one direction after the other
    pytest.param({"concurrent_directions": True}, marks=pytest.mark.slow),
    # every setting off its default at once (the quick tier's second case)
    {"concurrent_directions": True, "token_chunk_size": 2},
    # many calls of the token embedder
    pytest.param({"token_chunk_size": 2}, marks=pytest.mark.slow),
])
def test_embedder_settings_equal_padded_call(fixture_model, padded_reference,
                                             kwargs):
    sentences, expected = padded_reference
    # the defaults: the facade's own embedder (its graphs already traced;
    # test_facade_delegates_to_its_embedder checks it has the defaults)
    embedder = (BulkEmbedder(fixture_model.backbone, **kwargs) if kwargs
                else fixture_model.bulk_embedder)
    got = embedder.embed_sentences(sentences, batch_size=4)
    assert len(got) == len(sentences)
    for g, e in zip(got, expected):
        assert g.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, atol=1e-6)


def test_facade_delegates_to_its_embedder(fixture_model, all_layers):
    embedder = fixture_model.bulk_embedder
    assert isinstance(embedder, BulkEmbedder)
    assert fixture_model.bulk_embedder is embedder  # made once
    assert embedder.backbone is fixture_model.backbone
    assert (embedder.token_chunk_size, embedder.compute_tokens,
            embedder.compute_sentences,
            embedder.concurrent_directions) == (128, 8192, 128, False)
    assert fixture_model.OUTPUTS == BulkEmbedder.OUTPUTS
    for g, w in zip(embedder.embed_sentences(SENTENCES, batch_size=3),
                    all_layers):
        np.testing.assert_array_equal(g, w)
    streamed = embedder.iter_embeddings(SENTENCES, batch_size=3,
                                        chunk_size=4,
                                        spec=EmbeddingSpec(output="top"))
    facade = fixture_model.iter_embeddings(SENTENCES, batch_size=3,
                                           chunk_size=4, output="top")
    for g, w in zip(streamed, facade, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.slow
def test_embedder_pieces(fixture_model):
    # the pieces the bench times: the token table and one batch's LSTMs
    embedder = BulkEmbedder(fixture_model.backbone, token_chunk_size=2)
    table = embedder.embed_token_table(Batcher(None, 50), ["a", "b", "a"])
    assert table.shape == (5, 16)  # <S>, 3 tokens, </S>
    ids = Batcher(None, 50).batch_sentences([["a", "b", "a"]])
    np.testing.assert_allclose(
        table, fixture_model.backbone.embed_tokens(ids)[0], atol=1e-6)
    positions = np.array([[0, 1, 2, 1, 4], [0, 2, 4, 0, 0]], np.int32)
    encoded = embedder.encode(table, positions, np.array([5, 3], np.int32))
    assert list(encoded) == ["forward", "backward"]
    for layers in encoded.values():
        # time-major, rows as columns
        assert [h.shape for h in layers] == [(5, 16, 2)] * 2
        for h in layers:  # zero past each row's length
            np.testing.assert_array_equal(h[3:, :, 1], 0)
    # token k of a row of length L: forward[k], backward[L - 1 - k]
    vectors = embedder.embed_sentences([["a", "b", "a"], ["b"]])
    for row, n, length in ((0, 3, 5), (1, 1, 3)):
        for layer in (0, 1):
            np.testing.assert_allclose(
                vectors[row][layer + 1, :, :16],
                encoded["forward"][layer][1: n + 1, :, row], atol=1e-6)
            np.testing.assert_allclose(
                vectors[row][layer + 1, :, 16:],
                encoded["backward"][layer][length - 2: 0: -1, :, row],
                atol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="lengths: expected the rows longest first"):
        embedder.encode(table, positions[::-1], np.array([3, 5], np.int32))
    assert set(embedder.graphs) == {"tokens", "encode"}


@pytest.mark.parametrize("kwargs,error,match", [
    ({"token_chunk_size": 0}, ValueError,
     "token_chunk_size: expected an integer >= 1, found 0"),
    ({"token_chunk_size": True}, ValueError, "token_chunk_size: expected"),
    ({"compute_tokens": None}, ValueError,
     "compute_tokens: expected an integer >= 1, found None"),
    ({"compute_sentences": 0}, ValueError,
     "compute_sentences: expected an integer >= 1, found 0"),
    ({"concurrent_directions": 1}, TypeError,
     "concurrent_directions: expected a bool, found 1"),
])
def test_bad_embedder_settings(fixture_model, kwargs, error, match):
    with pytest.raises(error, match=match):
        BulkEmbedder(fixture_model.backbone, **kwargs)


@pytest.fixture(scope="module")
def budget_embedder(fixture_model):
    """One embedder whose compute-batch budget a test sets: the budget
    only feeds the planner, so its traced graphs serve every budget."""
    return BulkEmbedder(fixture_model.backbone)


@contextlib.contextmanager
def budget(embedder, **settings):
    saved = {name: getattr(embedder, name) for name in settings}
    for name, value in settings.items():
        setattr(embedder, name, value)
    try:
        yield embedder
    finally:
        for name, value in saved.items():
            setattr(embedder, name, value)


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    # the defaults: the whole input in one compute batch
    {},
    # a budget of 40 positions: batches of 1 to 8 short sentences, the
    # long ones alone (one is longer than the budget)
    {"compute_tokens": 40, "compute_sentences": 8},
    # one sentence per batch
    {"compute_tokens": 1},
])
def test_compute_batches_equal_padded_call(budget_embedder, padded_reference,
                                           kwargs):
    # the default call (batch_size=None): the embedder's own grouping
    sentences, expected = padded_reference
    assert max(map(len, sentences)) > 40 > 2 * min(map(len, sentences))
    with budget(budget_embedder, **kwargs) as embedder:
        got = embedder.embed_sentences(sentences)
    assert len(got) == len(sentences)
    for g, e in zip(got, expected):
        assert g.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, atol=1e-6)


def test_one_long_sentence_among_short_ones(budget_embedder,
                                            padded_reference):
    # the long sentence shares its compute batch with short ones (no
    # budget) or is cut off from them (a budget); both equal the padded call
    sentences, expected = padded_reference
    longest = max(range(len(sentences)), key=lambda k: len(sentences[k]))
    short = [k for k in range(len(sentences)) if len(sentences[k]) <= 3]
    picked = short[:2] + [longest] + short[2:4]
    assert len(sentences[longest]) > 4 * max(len(sentences[k])
                                             for k in short)
    for kwargs in ({}, {"compute_tokens": 3 * len(sentences[longest])}):
        with budget(budget_embedder, **kwargs) as embedder:
            got = embedder.embed_sentences([sentences[k] for k in picked])
        for g, k in zip(got, picked, strict=True):
            np.testing.assert_allclose(g, expected[k], atol=1e-6)


def test_one_sentence(fixture_model, padded_reference):
    sentences, expected = padded_reference
    for k in (0, len(sentences) - 1):
        (got,) = fixture_model.embed_sentences([sentences[k]])
        np.testing.assert_allclose(got, expected[k], atol=1e-6)
