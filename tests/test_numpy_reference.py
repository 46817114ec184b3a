"""The numpy reference (tests/numpy_reference.py) against bilm-tf's own
reference embeddings, plus smoke checks of the paths the fixture model does
not cover. If these pass, the numpy reference is trustworthy ground truth."""

import copy
import json
import pathlib
import sys

import h5py
import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import numpy_reference as nr  # noqa: E402

N_BATCHES = 10
N_LISTS = 3


@pytest.fixture(scope="module")
def options(model_dir):
    return json.loads((model_dir / "options.json").read_text())


@pytest.fixture(scope="module")
def weights(model_dir):
    return nr.load_hdf5_weights(model_dir / "lm_weights.hdf5")


@pytest.fixture(scope="module")
def sentences(model_dir):
    return json.loads((model_dir / "lm_embeddings_sentences.json").read_text())


@pytest.fixture(scope="module")
def expected(model_dir):
    """expected[k][i]: top layer of sentence i of list k, ``(n_tokens, 2P)``."""
    out = []
    for k in range(N_LISTS):
        with h5py.File(model_dir / f"lm_embeddings_{k}.hdf5", "r") as fin:
            rows = []
            for i in range(N_BATCHES):
                pair = fin[str(i)][...]  # (2, n_tokens, P): forward, backward
                rows.append(np.concatenate([pair[0], pair[1]], axis=-1))
            out.append(rows)
    return out


def _batch_char_ids(sentences, options, i):
    """Batch i = sentence i of each list."""
    return nr.sentence_char_ids(
        [sentences[k][i] for k in range(N_LISTS)],
        options["char_cnn"]["max_characters_per_token"],
    )


def _max_diff_top(result, expected, sentences, i):
    """Max |diff| of the top layer (BOS/EOS removed) over the three rows of
    batch i; also checks lengths and that the zero padding is zero."""
    top, lengths = nr.remove_bos_eos(result["layers"], result["lengths"])
    top = top[:, -1]  # (B, T, 2P)
    worst = 0.0
    for k in range(N_LISTS):
        ref = expected[k][i]
        n = ref.shape[0]
        assert n == len(sentences[k][i].split()) == lengths[k]
        worst = max(worst, float(np.abs(top[k, :n] - ref).max()))
        assert np.all(top[k, n:] == 0)
    return worst


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_first_batch_matches_bilm_tf(weights, options, sentences, expected,
                                     dtype):
    ids = _batch_char_ids(sentences, options, 0)
    result = nr.bilm_forward(weights, options, char_ids=ids, dtype=dtype)
    L, P = options["lstm"]["n_layers"], options["lstm"]["projection_dim"]
    assert result["layers"].shape == (N_LISTS, L + 1, ids.shape[1], 2 * P)
    assert result["token_embeddings"].shape == (N_LISTS, ids.shape[1], P)
    assert _max_diff_top(result, expected, sentences, 0) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_all_batches_match_statefully(weights, options, sentences,
                                      expected, dtype):
    """bilm-tf computed the fixtures with state carried batch to batch: row k
    of batch i starts from row k's final (c, h) of batch i - 1, in both
    directions and every layer. A stateless run must NOT match batch 1 (the
    first with a carried state) nor the last, which proves the
    statefulness is real (the batches between add no check of their own
    and cost 40% of the test)."""
    states = None
    for i in range(N_BATCHES):
        ids = _batch_char_ids(sentences, options, i)
        result = nr.bilm_forward(
            weights, options, char_ids=ids, initial_states=states, dtype=dtype
        )
        states = result["final_states"]
        assert _max_diff_top(result, expected, sentences, i) < 1e-6, i
        if i in (1, N_BATCHES - 1):
            stateless = nr.bilm_forward(weights, options, char_ids=ids,
                                        dtype=dtype)
            assert _max_diff_top(stateless, expected, sentences, i) > 1e-2, i


def test_char_ids_layout():
    ids = nr.sentence_char_ids(["a bc", "é"], max_characters_per_token=6)
    assert ids.shape == (2, 4, 6)
    pad = nr.PAD_CHAR + 1
    # <S>
    np.testing.assert_array_equal(ids[0, 0], [259, 257, 260, pad, pad, pad])
    np.testing.assert_array_equal(ids[0, 2],
                                  [259, 98 + 1, 99 + 1, 260, pad, pad])
    # </S>
    np.testing.assert_array_equal(ids[0, 3], [259, 258, 260, pad, pad, pad])
    np.testing.assert_array_equal(ids[1, 1],
                                  [259, 0xC3 + 1, 0xA9 + 1, 260, pad, pad])
    assert np.all(ids[1, 3] == 0)  # padding token
    long = nr.sentence_char_ids(["abcdefgh"], max_characters_per_token=6)[0, 1]
    # truncated
    np.testing.assert_array_equal(long, [259, 98, 99, 100, 101, 260])


def test_reverse_sequence():
    x = np.arange(2 * 4).reshape(2, 4)[..., None]
    out = nr.reverse_sequence(x, np.array([3, 4]))[..., 0]
    np.testing.assert_array_equal(out, [[2, 1, 0, 3], [7, 6, 5, 4]])


def _random_options(options, activation, skip):
    opts = copy.deepcopy(options)
    opts["char_cnn"]["activation"] = activation
    opts["lstm"]["use_skip_connections"] = skip
    opts["lstm"]["n_layers"] = 3
    return opts


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("skip", [False, True])
def test_random_weights_smoke(options, sentences, activation, skip):
    opts = _random_options(options, activation, skip)
    weights = nr.random_bilm_weights(opts, seed=3)
    assert weights["char_embed"].shape == (261, 4)
    assert all(v.dtype == np.float32 for v in weights.values())
    ids = nr.sentence_char_ids(
        [sentences[0][3], sentences[1][5], "x"],
        opts["char_cnn"]["max_characters_per_token"],
    )
    result = nr.bilm_forward(weights, opts, char_ids=ids)
    B, N = ids.shape[:2]
    layers = result["layers"]
    assert layers.shape == (B, 4, N, 32)
    assert np.all(np.isfinite(layers))
    np.testing.assert_array_equal(result["lengths"], (ids > 0).any(-1).sum(-1))
    # Not saturated / not dead: the LSTM outputs have a reasonable spread.
    assert 1e-3 < layers[:, 1:].std() < 3.0
    # Past each row's length every LSTM output is zero.
    for b, n in enumerate(result["lengths"]):
        assert np.all(layers[b, 1:, n:] == 0)
    # float32 and float64 agree.
    r32 = nr.bilm_forward(weights, opts, char_ids=ids, dtype=np.float32)
    assert np.abs(r32["layers"] - layers).max() < 1e-4


def test_skip_connections_add_layer_input(options, sentences):
    """With skip connections, layer l >= 1 output = plain LSTM output + layer
    l - 1 output, checked against a run of each layer by hand."""
    opts = _random_options(options, "relu", True)
    weights = nr.random_bilm_weights(opts, seed=5)
    ids = nr.sentence_char_ids(["a b c", "hello"], 50)
    result = nr.bilm_forward(weights, opts, char_ids=ids)
    lengths = result["lengths"]
    P, H = 16, 64
    x = result["token_embeddings"]
    for layer in range(3):
        prefix = nr.lstm_prefix(0, layer)
        out, _ = nr.run_lstm_layer(
            x, lengths, weights[f"{prefix}/W_0"], weights[f"{prefix}/B"],
            weights[f"{prefix}/W_P_0"], 3, 3,
            np.zeros((2, H)), np.zeros((2, P)),
        )
        if layer > 0:
            live = (np.arange(x.shape[1])[None] < lengths[:, None])[..., None]
            out = np.where(live, out + x, 0.0)
        np.testing.assert_allclose(result["layers"][:, layer + 1, :, :P], out,
                                   atol=1e-10)
        x = out


def test_token_input(options):
    opts = copy.deepcopy(options)
    weights = nr.random_bilm_weights(opts, seed=7)
    vocab = ["<S>", "</S>", "<UNK>", "the", "cat"]
    ids = nr.sentence_token_ids(["the cat", "dog"], vocab)
    np.testing.assert_array_equal(ids, [[1, 4, 5, 2], [1, 3, 2, 0]])
    table = np.random.default_rng(0).normal(size=(len(vocab), 16))
    result = nr.bilm_forward(weights, opts, token_ids=ids,
                             token_embedding=table)
    np.testing.assert_array_equal(result["lengths"], [4, 3])
    np.testing.assert_allclose(result["token_embeddings"][0, 1], table[3])
    assert np.all(result["token_embeddings"][1, 3] == 0)
    assert result["layers"].shape == (2, 3, 4, 32)


def test_scalar_mix():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 5, 4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    w = np.array([0.1, -0.2, 0.3])
    s = np.exp(w + 1 / 3) / np.exp(w + 1 / 3).sum()
    out = nr.scalar_mix(x, mask, w, 0.5)
    np.testing.assert_allclose(out, 0.5 * np.einsum("l,bltd->btd", s, x))
    np.testing.assert_allclose(
        nr.scalar_mix(x, mask, w, 2.0, use_top_only=True), 2 * x[:, -1])
    ln = nr.scalar_mix(x, mask, np.zeros(3), 1.0, do_layer_norm=True)
    # Each normalised layer has mean 0 / variance 1 over the masked entries.
    for k in range(3):
        one_hot = np.full(3, -1e9)
        one_hot[k] = 0.0
        y = nr.scalar_mix(x, mask, one_hot, 1.0, do_layer_norm=True)[mask]
        assert abs(y.mean()) < 1e-9 and abs(y.var() - 1) < 1e-9
    assert ln.shape == (2, 5, 4)
    assert nr.l2_regularization(w, 0.01) == pytest.approx(0.01 * 0.14)
