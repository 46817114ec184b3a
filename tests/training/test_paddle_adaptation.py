"""``train --init_checkpoint`` from the Fluid checkpoint Paddle 1.8.5
wrote (tests/fixtures/paddle_baike/checkpoint/, trained 3 Adagrad steps):
the new run starts from Paddle's LM, Paddle's softmax and Paddle's
Adagrad accumulators, each compared with the raw variable files (read
with the format reader, rearranged here in numpy: Paddle's gate blocks
c, i, f, o to bilm-tf's i, c, f, o)."""

import numpy as np
import pytest

from bilm_keras import cli
from bilm_keras.options import BiLMOptions
from bilm_keras.data.vocab_for_options import load_vocab
from bilm_keras.training.model_setup import build_model
from bilm_keras.training.paddle_adaptation import (
    keep_paddle_softmax,
    read_init_checkpoint,
    set_paddle_accumulators,
)
from bilm_keras.weights.paddle_conversion import paddle_options
from bilm_keras.weights.paddle_persistables import read_variable


def _raw(ckpt, name):
    return read_variable(ckpt / name).astype(np.float32)


def _tf_gates(x):  # Paddle (c, i, f, o) -> TF1 (i, c, f, o), last axis
    c, i, f, o = np.split(x, 4, axis=-1)
    return np.concatenate([i, c, f, o], axis=-1)


def test_softmax_and_accumulators_are_paddles(paddle_baike_fixtures,
                                              capsys):
    ckpt = paddle_baike_fixtures / "checkpoint"
    vocab_file = str(paddle_baike_fixtures / "vocab.txt")
    options = BiLMOptions.from_dict(paddle_options(ckpt))
    model = read_init_checkpoint(str(ckpt))
    lm, optimizer = build_model(options, init_paddle=model)
    vocab = load_vocab(vocab_file, options)
    kept = keep_paddle_softmax(lm, model, vocab=vocab,
                               vocab_file=vocab_file)
    assert set_paddle_accumulators(lm, optimizer, model, *kept)
    assert "35 of the 35 words" in capsys.readouterr().out

    np.testing.assert_array_equal(lm.softmax.W.numpy(),
                                  _raw(ckpt, "softmax_weight"))
    np.testing.assert_array_equal(lm.softmax.b.numpy(),
                                  _raw(ckpt, "softmax_bias"))
    np.testing.assert_array_equal(
        optimizer.accumulator(lm.softmax.W).numpy(),
        _raw(ckpt, "softmax_weight_moment_0"))
    # the token table: row 0 pads (bilm-tf's initial 1.0), then Paddle's
    table = lm.backbone.token_embedder.embeddings
    acc = optimizer.accumulator(table).numpy()
    np.testing.assert_array_equal(acc[1:],
                                  _raw(ckpt, "embedding_para_moment_0"))
    assert (acc[0] == 1.0).all()
    np.testing.assert_array_equal(table.numpy()[1:],
                                  _raw(ckpt, "embedding_para"))
    # the backward direction's second layer (lstmp_3): kernel over
    # [x ; m_prev] with the gate blocks moved; the accumulator alike
    cell = lm.backbone.stacks["backward"].cells[1]
    kernel = np.concatenate([_raw(ckpt, "bw_layer2_gate_w"),
                             _raw(ckpt, "lstmp_3.w_0")], 0)
    np.testing.assert_array_equal(cell.kernel_t.numpy().T,
                                  _tf_gates(kernel))
    moments = np.concatenate([_raw(ckpt, "bw_layer2_gate_w_moment_0"),
                              _raw(ckpt, "lstmp_3.w_0_moment_0")], 0)
    np.testing.assert_array_equal(
        optimizer.accumulator(cell.kernel_t).numpy().T, _tf_gates(moments))
    # the bias: TF1's cell adds 1 to the forget gate, Paddle's does not
    bias = _tf_gates(_raw(ckpt, "lstmp_3.b_0").reshape(-1))
    bias[32:48] -= 1.0
    np.testing.assert_allclose(cell.bias.numpy(), bias, rtol=0, atol=1e-7)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_cli_trains_from_the_fluid_directory(paddle_baike_fixtures,
                                             tmp_path, capsys):
    fx = paddle_baike_fixtures
    assert cli.main(["train", "--save_dir", str(tmp_path / "adapted"),
                     "--init_checkpoint", str(fx / "checkpoint"),
                     "--vocab_file", str(fx / "vocab.txt"),
                     "--train_prefix", str(fx / "train.txt"),
                     "--batch_size", "2", "--max_steps", "1",
                     "--n_gpus", "0"]) == 0
    out = capsys.readouterr().out
    assert "keep their rows from" in out and "Adagrad: accumulators" in out
    assert (tmp_path / "adapted" / "options.json").is_file()
