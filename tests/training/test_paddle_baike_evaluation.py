"""The Fluid (baike) checkpoint Paddle 1.8.5 wrote
(tests/fixtures/paddle_baike/checkpoint/) where a ``--save_dir`` is
taken: ``test --stateful`` gives upstream's own stateful evaluation
(``train.py`` ``eval``, perplexity_batch_1.json: one row, states carried,
48 positions used whole by its 4-step windows, so bilm-tf's one step a
batch scores the same tokens), each direction to 1e-4; ``dump-weights``
writes what ``convert-paddle`` writes."""

import json
import math

import h5py
import numpy as np
import pytest

from bilm_keras import cli
from bilm_keras.training.stateful_evaluation import evaluate_stateful
from bilm_keras.weights.model_detection import (
    ModelDetectionError,
    detect_model,
)
from bilm_keras.weights.paddle_conversion import convert_paddle
from helpers import assert_plain_test_figures


def _expected(fixtures):
    return json.loads((fixtures / "perplexity_batch_1.json").read_text())


def test_the_fluid_directory_is_a_paddle_checkpoint(paddle_baike_fixtures):
    ckpt = paddle_baike_fixtures / "checkpoint"
    assert detect_model(ckpt).checkpoint == str(ckpt)
    assert detect_model(ckpt).is_paddle
    with pytest.raises(ModelDetectionError, match="other_model: expected a "
                       "model"):
        detect_model(paddle_baike_fixtures / "other_model")


@pytest.mark.slow
def test_upstream_stateful_perplexity_reproduced(paddle_baike_fixtures):
    fx = paddle_baike_fixtures
    expected = _expected(fx)
    result = evaluate_stateful(save_dir=str(fx / "checkpoint"),
                               vocab_file=str(fx / "vocab.txt"),
                               test_prefix=str(fx / "heldout.txt"),
                               batch_size=1)
    assert result.n_tokens == expected["n_batches"] * expected["num_steps"]
    for direction in ("forward", "backward"):
        np.testing.assert_allclose(
            result.direction_perplexities[direction],
            expected[f"{direction}_perplexity"], rtol=1e-4)
    # upstream's figure: exp of the mean loss over both directions
    np.testing.assert_allclose(result.perplexity, expected["perplexity"],
                               rtol=1e-4)


@pytest.mark.slow  # test_upstream_stateful_perplexity_reproduced: numbers
def test_cli_test_and_dump_weights(paddle_baike_fixtures, tmp_path,
                                   capsys):
    fx = paddle_baike_fixtures
    assert cli.main(["test", "--save_dir", str(fx / "checkpoint"),
                     "--vocab_file", str(fx / "vocab.txt"), "--test_prefix",
                     str(fx / "heldout.txt"), "--batch_size", "1",
                     "--stateful"]) == 0
    out = capsys.readouterr().out
    assert (f"bilm-tf's run_test.py perplexity: "
            f"{_expected(fx)['perplexity']:.3f}") in out
    outfile = tmp_path / "dump" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(fx / "checkpoint"),
                     "--outfile", str(outfile)]) == 0
    convert_paddle(fx / "checkpoint", tmp_path / "converted",
                   vocab_file=fx / "vocab.txt")
    with h5py.File(outfile, "r") as a, \
            h5py.File(tmp_path / "converted" / "lm_weights.hdf5", "r") as b:
        assert sorted(a) == sorted(b)
        for name in ("embedding",
                     "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"):
            np.testing.assert_array_equal(a[name][...], b[name][...])


# export-hub end to end; tests/export/test_word_input_hub_export.py
# checks the export itself
@pytest.mark.nightly
@pytest.mark.slow  # an export and its SavedModel
def test_export_hub_from_the_fluid_directory(paddle_baike_fixtures,
                                             tmp_path):
    """``export-hub --save_dir`` on Paddle's directory: the SavedModel's
    ``default`` signature gives Paddle's own layers (reference.npz)."""
    import tensorflow as tf

    fx = paddle_baike_fixtures
    out = tmp_path / "hub"
    assert cli.main(["export-hub", "--save_dir", str(fx / "checkpoint"),
                     "--vocab_file", str(fx / "vocab.txt"), "--outdir",
                     str(out)]) == 0
    sentences = (fx / "sentences.txt").read_text("utf-8").splitlines()
    got = tf.saved_model.load(str(out)).signatures["default"](
        strings=tf.constant(sentences))
    with np.load(fx / "reference.npz") as ref:
        for i, sentence in enumerate(sentences):
            n = len(sentence.split())
            words = slice(1, n + 1)
            layer2 = got["lstm_outputs2"][i, :n].numpy()
            np.testing.assert_allclose(layer2[:, :8],
                                       ref[f"s{i}_fw_2"][words],
                                       rtol=0, atol=1e-5)
            np.testing.assert_allclose(layer2[:, 8:],
                                       ref[f"s{i}_bw_2"][::-1][words],
                                       rtol=0, atol=1e-5)


def _zero_state_perplexities(fx):
    """Paddle's own figure for sentences.txt, each sentence from zero
    states: reference.npz's log-probabilities, one LoD batch."""
    with np.load(fx / "reference.npz") as ref:
        n = len((fx / "sentences.txt").read_text("utf-8").splitlines())
        return {direction: math.exp(-np.mean(np.concatenate(
            [ref[f"s{i}_{short}_logprob"] for i in range(n)])))
            for direction, short in (("forward", "fw"), ("backward", "bw"))}


@pytest.mark.slow  # three traces of the model
def test_plain_test_is_each_sentence_from_zero_states(paddle_baike_fixtures):
    """The converted options carry the states across sentences (upstream's
    training), yet ``test`` without ``--stateful`` starts each sentence
    from zero states: Paddle's figure at every batch size."""
    fx = paddle_baike_fixtures
    assert_plain_test_figures(
        fx / "checkpoint", fx / "vocab.txt", fx / "sentences.txt",
        n_tokens=36, perplexities=_zero_state_perplexities(fx))
