"""The whole Keras model against the independent numpy forward pass on
random weights, for the paths the fixture model does not use: skip
connections, tanh, three layers, tight clipping, token input."""

import copy

import h5py
import numpy as np
import pytest

import numpy_reference as nr
from helpers import write_model_files
from bilm_keras import BidirectionalLanguageModel
from bilm_keras.weights import save_bilm_tf_hdf5

BASE_OPTIONS = {
    "lstm": {"cell_clip": 3, "use_skip_connections": True, "n_layers": 3,
             "proj_clip": 3, "projection_dim": 8, "dim": 24},
    "char_cnn": {"embedding": {"dim": 4},
                 "filters": [[1, 4], [2, 8], [3, 8]], "n_highway": 2,
                 "n_characters": 261, "max_characters_per_token": 20,
                 "activation": "tanh"},
}

SENTENCES = [
    "the quick brown fox jumps".split(),
    [],
    "深度 上下文 词 表示 ！".split(),
    ["a-very-long-token-that-exceeds-the-character-limit-by-far"] * 3,
    "a b".split(),
]


def _options(**changes):
    options = copy.deepcopy(BASE_OPTIONS)
    for section, values in changes.items():
        options[section].update(values)
    return options


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes",
    [
        {},
        pytest.param({"char_cnn": {"activation": "relu"}},
                     marks=pytest.mark.slow),
        pytest.param({"lstm": {"use_skip_connections": False}},
                     marks=pytest.mark.slow),
        {"lstm": {"cell_clip": 0.5, "proj_clip": 0.05}},  # clipping active
    ],
    ids=["skip-tanh", "skip-relu", "no-skip", "tight-clip"],
)
def test_char_model_matches_numpy(tmp_path, changes):
    options = _options(**changes)
    weights = nr.random_bilm_weights(options, seed=1)
    model = BidirectionalLanguageModel(
        *write_model_files(tmp_path, options, weights))
    char_ids = nr.sentence_char_ids(SENTENCES, 20)
    out = model(char_ids)
    ref = nr.bilm_forward(weights, options, char_ids=char_ids)
    expected, lengths = nr.remove_bos_eos(ref["layers"], ref["lengths"])
    assert list(out["lengths"].numpy()) == list(lengths)
    np.testing.assert_allclose(out["lm_embeddings"].numpy(), expected,
                               atol=1e-5)
    np.testing.assert_allclose(out["token_embeddings"].numpy(),
                               ref["token_embeddings"], atol=1e-5)
    if changes.get("lstm", {}).get("proj_clip") == 0.05:
        top = np.abs(out["lm_embeddings"].numpy()[:, 1:])
        # outputs hit the clip (with skip connections layers add up)
        assert np.isclose(top[:, 0].max(), 0.05, atol=1e-7)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_token_model_matches_numpy(tmp_path):
    options = _options()
    weights = nr.random_bilm_weights(options, seed=2)
    vocab = ["<S>", "</S>", "<UNK>", "the", "fox", "a", "b"]
    emb = np.random.default_rng(3).normal(size=(len(vocab), 8))
    emb = emb.astype(np.float32)
    opt, wfile = write_model_files(tmp_path, options, weights)
    emb_file = tmp_path / "embedding.hdf5"
    with h5py.File(emb_file, "w") as f:
        f.create_dataset("embedding", data=emb)
    model = BidirectionalLanguageModel(
        opt, wfile, use_character_inputs=False,
        embedding_weight_file=str(emb_file))
    sentences = [["the", "fox", "zzz"], [], ["a"]]
    ids = nr.sentence_token_ids(sentences, vocab)
    ref = nr.bilm_forward(weights, options, token_ids=ids,
                          token_embedding=emb)
    expected, _ = nr.remove_bos_eos(ref["layers"], ref["lengths"])
    np.testing.assert_allclose(model(ids)["lm_embeddings"].numpy(), expected,
                               atol=1e-5)


def test_save_bilm_tf_hdf5_round_trip(tmp_path):
    options = _options()
    weights = nr.random_bilm_weights(options, seed=4)
    model = BidirectionalLanguageModel(
        *write_model_files(tmp_path, options, weights))
    out = tmp_path / "saved.hdf5"
    save_bilm_tf_hdf5(model.backbone, out)
    saved = nr.load_hdf5_weights(out)
    assert set(saved) == set(weights)
    for name, value in weights.items():
        assert saved[name].shape == value.shape, name
        np.testing.assert_array_equal(saved[name], value)
    assert not list(tmp_path.glob("*.tmp-*"))
