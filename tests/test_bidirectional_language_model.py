"""Bad input to the inference model: clear errors or documented behaviour."""

import json
import shutil

import h5py
import numpy as np
import pytest

from bilm_keras import Batcher, BidirectionalLanguageModel
from bilm_keras.options import OptionsError
from bilm_keras.weights import WeightFileError


@pytest.fixture(scope="module")
def model(fixture_bilm):
    return fixture_bilm


def test_sentence_without_tokens_has_length_zero(model):
    ids = Batcher(None, 50).batch_sentences([[], ["a", "b"]])
    out = model(ids)
    assert list(out["lengths"].numpy()) == [0, 2]
    assert out["lm_embeddings"].shape == (2, 3, 2, 32)
    assert not out["lm_embeddings"].numpy()[0].any()
    assert not out["mask"].numpy()[0].any()
    only_empty = model(Batcher(None, 50).batch_sentences([[]]))
    assert only_empty["lm_embeddings"].shape == (1, 3, 0, 32)


def test_empty_batch(model):
    with pytest.raises(ValueError, match="at least one sentence, found 0"):
        model(np.zeros((0, 4, 50), np.int32))


@pytest.mark.parametrize(
    "ids,error,match",
    [
        (np.zeros((2, 4), np.int32), ValueError, "expected rank 3"),
        (np.zeros((2, 4, 20), np.int32), ValueError,
         "expected 50 characters per token.*found 20"),
        (np.zeros((2, 4, 50), np.float32), TypeError,
         "expected an integer tensor, found float32"),
    ],
)
def test_wrong_ids(model, ids, error, match):
    with pytest.raises(error, match=match):
        model(ids)


def test_stateful_batch_larger_than_buffer(model_dir):
    model = BidirectionalLanguageModel(
        str(model_dir / "options.json"), str(model_dir / "lm_weights.hdf5"),
        stateful=True, max_batch_size=2)
    with pytest.raises(ValueError, match="3 rows exceeds max_batch_size=2"):
        model(np.ones((3, 4, 50), np.int32))


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("n_characters", [261, 262])
def test_n_characters_261_or_262(model_dir, model, tmp_path, n_characters):
    options = json.loads((model_dir / "options.json").read_text())
    options["char_cnn"]["n_characters"] = n_characters
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    changed = BidirectionalLanguageModel(str(path),
                                         str(model_dir / "lm_weights.hdf5"))
    ids = Batcher(None, 50).batch_sentences([["a", "b"]])
    # the reference: the module's model, from the fixture's own options
    np.testing.assert_array_equal(changed(ids)["lm_embeddings"].numpy(),
                                  model(ids)["lm_embeddings"].numpy())


def test_options_missing_key(model_dir, tmp_path):
    options = json.loads((model_dir / "options.json").read_text())
    del options["lstm"]["projection_dim"]
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    with pytest.raises(OptionsError,
                       match="options.json: missing field "
                             "'lstm.projection_dim'"):
        BidirectionalLanguageModel(str(path),
                                   str(model_dir / "lm_weights.hdf5"))


def _copy_weights(model_dir, tmp_path):
    path = tmp_path / "weights.hdf5"
    shutil.copy(model_dir / "lm_weights.hdf5", path)
    return path


def test_weight_file_missing_dataset(model_dir, tmp_path):
    path = _copy_weights(model_dir, tmp_path)
    with h5py.File(path, "a") as f:
        del f["CNN_high_1/W_carry"]
    with pytest.raises(
        WeightFileError,
        match=r"weights.hdf5: missing dataset 'CNN_high_1/W_carry' "
              r"\(expected shape \(124, 124\)\)",
    ):
        BidirectionalLanguageModel(str(model_dir / "options.json"), str(path))


def test_weight_file_wrong_shape(model_dir, tmp_path):
    path = _copy_weights(model_dir, tmp_path)
    name = "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
    with h5py.File(path, "a") as f:
        del f[name]
        f.create_dataset(name, data=np.zeros((32, 128), np.float32))
    with pytest.raises(
        WeightFileError,
        match=rf"'{name}' has shape \(32, 128\), expected \(32, 256\)",
    ):
        BidirectionalLanguageModel(str(model_dir / "options.json"), str(path))


def test_options_that_do_not_fit_the_weights(model_dir, tmp_path):
    options = json.loads((model_dir / "options.json").read_text())
    options["lstm"]["dim"] = 32
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    with pytest.raises(WeightFileError, match=r"W_0' has shape \(32, 256\), "
                                              r"expected \(32, 128\)"):
        BidirectionalLanguageModel(str(path),
                                   str(model_dir / "lm_weights.hdf5"))


def test_missing_files(model_dir, tmp_path):
    with pytest.raises(OptionsError, match="nope.json: options file not"):
        BidirectionalLanguageModel(str(tmp_path / "nope.json"), "x.hdf5")
    with pytest.raises(WeightFileError, match="nope.hdf5: weight file not"):
        BidirectionalLanguageModel(str(model_dir / "options.json"),
                                   str(tmp_path / "nope.hdf5"))


def test_token_input_needs_embedding_file(model_dir):
    with pytest.raises(ValueError, match="needs embedding_weight_file"):
        BidirectionalLanguageModel(str(model_dir / "options.json"),
                                   str(model_dir / "lm_weights.hdf5"),
                                   use_character_inputs=False)


def test_token_backbone_without_a_vocabulary_size(model_dir):
    from bilm_keras.models.bilm_backbone import BiLMBackbone
    from bilm_keras.options import BiLMOptions

    options = BiLMOptions.from_json(model_dir / "options.json")
    assert options.n_tokens_vocab is None  # the fixture's options
    with pytest.raises(ValueError, match="n_tokens_vocab: token input needs "
                                         "a vocabulary"):
        BiLMBackbone.from_options(options, use_character_inputs=False)
    backbone = BiLMBackbone.from_options(
        options, use_character_inputs=False, n_tokens_vocab=5).build_all()
    # the table holds the tokens and the padding row
    assert backbone.token_embedder.embeddings.shape == (6, 16)
