"""LSTMCellWithProjection and LSTMStack against the numpy reference, and
the config round trips of the recurrent layers and the backbone."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as nr
from bilm_keras.layers import LSTMCellWithProjection, LSTMStack
from bilm_keras.layers.lstm_cell_with_projection import (
    lstm_step,
    lstm_step_backward,
)
from bilm_keras.layers.recurrence import reverse_within_lengths
from bilm_keras.models import BiLMBackbone

RNG = np.random.default_rng(7)


def _cell_weights(cell):
    return (cell.kernel.numpy(), cell.bias.numpy(),
            cell.projection_kernel.numpy())


def _randomize(layer, scale=0.5):
    for w in layer.weights:
        w.assign(RNG.normal(scale=scale, size=w.shape).astype("float32"))


@pytest.mark.parametrize("clips", [(None, None), (0.3, 0.1)])
def test_cell_step_matches_tf1_lstm_cell(clips):
    cell = LSTMCellWithProjection(12, 5, *clips)
    cell.build((None, 7))
    _randomize(cell)
    x = RNG.normal(size=(3, 7)).astype("float32")
    c0 = RNG.normal(size=(3, 12)).astype("float32")
    h0 = RNG.normal(size=(3, 5)).astype("float32")
    h, (c, h_state) = cell(x, (c0, h0))
    c_ref, h_ref = nr.lstm_step(x, c0, h0, *_cell_weights(cell), *clips)
    np.testing.assert_allclose(c.numpy(), c_ref, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), h_ref, atol=1e-5)
    np.testing.assert_array_equal(h.numpy(), h_state.numpy())
    if clips[0]:
        assert np.abs(c.numpy()).max() == pytest.approx(0.3)
        assert np.abs(h.numpy()).max() == pytest.approx(0.1)


def _step_arguments(n_directions=2, batch=3, units=12, proj=5, n_in=7):
    """Random stacked cells' step inputs, states and weights (tf) and the
    per-direction cells' weights (numpy)."""
    def normal(*shape):
        return RNG.normal(size=shape).astype("float32")
    x = normal(n_directions, batch, n_in)
    kernel = normal(n_directions, n_in + proj, 4 * units) * 0.5
    bias = normal(n_directions, 4 * units) * 0.5
    projection = normal(n_directions, units, proj) * 0.5
    c0, h0 = normal(n_directions, batch, units), normal(n_directions, batch,
                                                        proj)
    z_input = np.einsum("dbi,dig->dbg", x, kernel[:, :n_in]) + bias[:, None]
    tensors = [tf.constant(a) for a in (z_input, c0, h0, kernel[:, n_in:],
                                        projection)]
    return tensors, (x, c0, h0, kernel, bias, projection)


@pytest.mark.parametrize("clips", [(None, None), (0.3, 0.1)])
def test_step_batched_over_directions_matches_numpy(clips):
    """``lstm_step`` over `(directions, batch)` leading axes, as the
    unrolled window runs it: each direction is TF1's step with its own
    weights; the trace for the backward pass changes no value."""
    (z_input, c0, h0, w_h, w_p), arrays = _step_arguments()
    kwargs = {"cell_clip": clips[0], "proj_clip": clips[1]}
    c, h = lstm_step(z_input, c0, h0, w_h, w_p, **kwargs)
    c_traced, h_traced, step = lstm_step(z_input, c0, h0, w_h, w_p,
                                         trace=True, **kwargs)
    np.testing.assert_array_equal(c_traced, c)
    np.testing.assert_array_equal(h_traced, h)
    assert (step.c_inside is None) == (step.h_inside is None) == (
        clips[0] is None)
    for d, (x, c_prev, h_prev, kernel, bias, projection) in enumerate(
            zip(*arrays)):
        c_ref, h_ref = nr.lstm_step(x, c_prev, h_prev, kernel, bias,
                                    projection, *clips)
        np.testing.assert_allclose(c[d], c_ref, atol=1e-5)
        np.testing.assert_allclose(h[d], h_ref, atol=1e-5)
    if clips[0]:  # the clips bind
        assert np.abs(c).max() == pytest.approx(clips[0])
        assert np.abs(h).max() == pytest.approx(clips[1])


@pytest.mark.parametrize("projection,clips", [
    (True, (0.3, 0.1)), (True, (None, None)), (False, (0.3, 0.1))])
def test_step_backward_matches_autodiff(projection, clips):
    """``lstm_step_backward`` gives autodiff's gradients of one step."""
    (z_input, c0, h0, w_h, w_p), _ = _step_arguments(
        proj=5 if projection else 12)
    w_p = w_p if projection else None
    kwargs = {"cell_clip": clips[0], "proj_clip": clips[1]}
    # the gradients reaching the step's c and h from later steps
    d_h = tf.constant(RNG.normal(size=h0.shape), tf.float32)
    d_c = tf.constant(RNG.normal(size=c0.shape), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([z_input, c0, h0])
        c, h = lstm_step(z_input, c0, h0, w_h, w_p, **kwargs)
        loss = tf.reduce_sum(c * d_c) + tf.reduce_sum(h * d_h)
    expected = tape.gradient(loss, [z_input, c0, h0])
    _, _, step = lstm_step(z_input, c0, h0, w_h, w_p, trace=True, **kwargs)
    d_z, _, d_c_prev, d_h_prev = lstm_step_backward(d_h, d_c, step, w_h, w_p)
    for got, want in zip((d_z, d_c_prev, d_h_prev), expected):
        assert float(tf.reduce_max(tf.abs(want))) > 0
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("skip", [False, True])
def test_stack_matches_dynamic_rnn(skip):
    stack = LSTMStack(10, 4, n_layers=2, cell_clip=1.0, proj_clip=1.0,
                      use_skip_connections=skip)
    stack.build((None, None, 4))
    _randomize(stack)
    x = RNG.normal(size=(4, 6, 4)).astype("float32")
    lengths = np.array([6, 0, 3, 1], np.int32)
    states = [(RNG.normal(size=(4, 10)).astype("float32"),
               RNG.normal(size=(4, 4)).astype("float32")) for _ in range(2)]
    outputs, finals = stack(x, lengths, initial_states=states)
    layer_in = x
    for i, cell in enumerate(stack.cells):
        ref, (c, h) = nr.run_lstm_layer(layer_in, lengths, *_cell_weights(cell),
                                        1.0, 1.0, *states[i])
        if skip and i > 0:
            ref = (ref + layer_in) * (np.arange(6)[None] < lengths[:, None])[
                ..., None]
        np.testing.assert_allclose(outputs[i].numpy(), ref, atol=1e-5)
        np.testing.assert_allclose(finals[i][0].numpy(), c, atol=1e-5)
        np.testing.assert_allclose(finals[i][1].numpy(), h, atol=1e-5)
        layer_in = ref
    # a row of length 0 keeps its initial state
    np.testing.assert_array_equal(finals[0][0].numpy()[1], states[0][0][1])


def test_stack_dropout_only_in_training():
    stack = LSTMStack(8, 4, n_layers=1, dropout=0.5)
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    lengths = np.array([3, 3])
    a = stack(x, lengths)[0][0].numpy()
    np.testing.assert_array_equal(a, stack(x, lengths)[0][0].numpy())
    tf.random.set_seed(0)
    b = stack(x, lengths, training=True)[0][0].numpy()
    assert not np.allclose(a, b)


def test_reverse_within_lengths_both_layouts():
    x = RNG.normal(size=(3, 5, 2)).astype("float32")
    lengths = np.array([5, 0, 3], np.int32)
    expected = nr.reverse_sequence(x, lengths)
    np.testing.assert_array_equal(reverse_within_lengths(x, lengths),
                                  expected)
    time_major = reverse_within_lengths(np.transpose(x, (1, 0, 2)), lengths,
                                        time_major=True)
    np.testing.assert_array_equal(np.transpose(time_major, (1, 0, 2)),
                                  expected)


def _round_trip(layer):
    config = layer.get_config()
    json.dumps(config)
    again = type(layer).from_config(config)
    assert again.get_config() == config
    restored = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(keras.saving.serialize_keras_object(layer))))
    assert type(restored) is type(layer)
    assert restored.get_config() == config
    return again


def test_recurrent_configs_round_trip():
    _round_trip(LSTMCellWithProjection(8, 4, 3.0, 3.0, forget_bias=0.5))
    _round_trip(LSTMStack(8, 4, 3, 1.0, 2.0, True, dropout=0.1))


@pytest.mark.slow
@pytest.mark.parametrize("use_chars", [True, False])
def test_backbone_config_round_trip_same_outputs(use_chars):
    kwargs = dict(lstm_dim=12, projection_dim=6, n_layers=2, cell_clip=3.0,
                  proj_clip=3.0, use_skip_connections=True,
                  use_character_inputs=use_chars, dropout=0.1)
    if use_chars:
        kwargs.update(filters=[[1, 4], [2, 6]], n_highway=1,
                      char_embedding_dim=3, max_characters_per_token=8)
        ids = RNG.integers(1, 262, size=(2, 5, 8)).astype("int32")
    else:
        kwargs.update(n_tokens_vocab=19)
        ids = RNG.integers(1, 20, size=(2, 5)).astype("int32")
    ids[1, 3:] = 0
    backbone = BiLMBackbone(**kwargs).build_all()
    again = _round_trip(backbone).build_all()
    again.set_weights(backbone.get_weights())
    a, b = backbone(ids), again(ids)
    for key in ("token_embeddings", "lengths"):
        np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
    for key in ("forward", "backward"):
        for x, y in zip(a[key], b[key]):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
