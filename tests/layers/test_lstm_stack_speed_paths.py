"""The LSTM stack's speed paths: the time-major stack and the inference-only
recurrence against the numpy reference, and gradients through the training
recurrence."""

import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as nr
from bilm_keras.layers import LSTMStack
from bilm_keras.layers.recurrence import (
    run_recurrence,
)
from bilm_keras.models import BiLMBackbone

RNG = np.random.default_rng(17)
LENGTHS = np.array([5, 0, 3, 1], np.int32)


def _stack(skip=True):
    stack = LSTMStack(12, 5, n_layers=2, cell_clip=3.0, proj_clip=3.0,
                      use_skip_connections=skip)
    stack.build((None, None, 5))
    for w in stack.weights:
        w.assign(RNG.normal(scale=0.5, size=w.shape).astype("float32"))
    return stack


def _numpy_stack(stack, x, lengths):
    """Per-layer outputs of the stack from nr.run_lstm_layer (zero states)."""
    outputs, inputs = [], x
    for i, cell in enumerate(stack.cells):
        h, _ = nr.run_lstm_layer(
            inputs, lengths, cell.kernel.numpy(), cell.bias.numpy(),
            cell.projection_kernel.numpy(), stack.cell_clip, stack.proj_clip,
            np.zeros((len(x), cell.units)), np.zeros((len(x), 5)))
        if stack.use_skip_connections and i > 0:
            mask = (np.arange(x.shape[1])[None] < lengths[:, None])[..., None]
            h = (h + inputs) * mask
        outputs.append(h)
        inputs = h
    return outputs


@pytest.mark.parametrize("skip, clip", [(True, 3.0), (False, None)])
def test_call_and_infer_match_numpy(skip, clip):
    # the inference recurrence (weights on the left, rows running on past
    # their lengths, outputs zeroed after the loop), with and without clips
    stack = _stack(skip)
    for cell in stack.cells:
        cell.cell_clip = cell.proj_clip = clip
    stack.cell_clip = stack.proj_clip = clip
    x = RNG.normal(size=(4, 5, 5)).astype("float32")
    expected = _numpy_stack(stack, x, LENGTHS)
    got, _ = stack(x, LENGTHS)
    inferred = stack.infer(tf.transpose(x, (1, 0, 2)), LENGTHS)
    for g, i, e in zip(got, inferred, expected):
        np.testing.assert_allclose(g.numpy(), e, atol=1e-5)
        np.testing.assert_allclose(np.transpose(i.numpy(), (1, 0, 2)), e,
                                   atol=1e-5)


def test_recurrence_layouts_agree():
    stack = _stack()
    cell = stack.cells[0]
    z = RNG.normal(size=(4, 5, 48)).astype("float32")
    c0 = RNG.normal(size=(4, 12)).astype("float32")
    h0 = RNG.normal(size=(4, 5)).astype("float32")
    out_bm, (c_bm, h_bm) = run_recurrence(cell, z, LENGTHS, c0, h0)
    z_tm = np.transpose(z, (1, 0, 2))
    out_tm, (c_tm, h_tm) = run_recurrence(cell, z_tm, LENGTHS, c0, h0,
                                          time_major=True)
    np.testing.assert_allclose(np.transpose(out_tm.numpy(), (1, 0, 2)),
                               out_bm.numpy(), atol=1e-6)
    np.testing.assert_allclose(c_tm.numpy(), c_bm.numpy(), atol=1e-6)
    np.testing.assert_allclose(h_tm.numpy(), h_bm.numpy(), atol=1e-6)
    # a row of length 0 keeps its initial state
    np.testing.assert_array_equal(c_bm.numpy()[1], c0[1])


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_gradients_reach_every_lstm_weight():
    backbone = BiLMBackbone(lstm_dim=12, projection_dim=5, n_layers=2,
                            cell_clip=3.0, proj_clip=3.0,
                            use_skip_connections=True,
                            use_character_inputs=False,
                            n_tokens_vocab=8, dropout=0.1)
    backbone.build_all()
    x = tf.constant(RNG.normal(size=(4, 5, 5)).astype("float32"))
    states = [(tf.constant(RNG.normal(size=(4, 12)).astype("float32")),
               tf.constant(RNG.normal(size=(4, 5)).astype("float32")))
              for _ in range(2)]

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            loss = 0.0
            for direction in backbone.directions:
                outputs, final = backbone.run_direction(
                    direction, x, LENGTHS, initial_states=states,
                    training=True)
                loss += tf.reduce_sum(outputs[-1] ** 2)
                loss += tf.reduce_sum(final[-1][0] ** 2)
        variables = [w for stack in backbone.stacks.values()
                     for w in stack.trainable_weights]
        return variables, tape.gradient(loss, variables)

    variables, gradients = grads()
    assert len(variables) == 2 * 2 * 3  # directions x layers x (W, B, W_P)
    for v, g in zip(variables, gradients):
        assert g is not None, v.path
        g = g.numpy()
        assert np.all(np.isfinite(g)), v.path
        assert np.abs(g).max() > 0, v.path
