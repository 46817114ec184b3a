"""The training fast path (static unroll, one char-CNN pass per distinct
token) gives the plain path's loss, gradients and states."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.layers.lstm_stack import LSTMStack
from bilm_keras.layers.training_recurrence import (
    lstm_window,
    run_stacks_unrolled,
)
from bilm_keras.models.language_model import LanguageModel
from helpers import fixture_options, training_run

B, T, C = 3, 6, 10


def _batch(seed, use_chars):
    """Both directions' streams; tokens repeat (so dedup has work)."""
    rng = np.random.default_rng(seed)
    words = rng.integers(1, 262, size=(9, C))
    words[:, 4:] = 0  # padded chars, as the Batcher writes them
    batch = {}
    for suffix in ("", "_reverse"):
        token = rng.integers(0, 9, size=(B, T))
        batch["token_ids" + suffix] = tf.constant(token + 1, tf.int32)
        batch["tokens_characters" + suffix] = tf.constant(words[token],
                                                          tf.int32)
        batch["next_token_id" + suffix] = tf.constant(
            rng.integers(0, 32, size=(B, T)), tf.int32)
        mask = np.ones((B, T), np.float32)
        mask[0, -2:] = 0.0
        batch["mask" + suffix] = tf.constant(mask)
        # sentences start mid-window: states are zeroed there
        starts = np.zeros((B, T), np.float32)
        starts[0, 2] = starts[1, 0] = starts[1, 4] = starts[2, 3] = 1.0
        batch["sentence_start" + suffix] = tf.constant(starts)
    if not use_chars:
        del batch["tokens_characters"], batch["tokens_characters_reverse"]
    return batch


def _loss_grads_states(lm, batch, states, training):
    with tf.GradientTape() as tape:
        out = lm(batch, initial_states=states, training=training)
    grads = tape.gradient(out["loss"], lm.trainable_variables)
    return out, [tf.convert_to_tensor(g) for g in grads]


@pytest.mark.slow
@pytest.mark.parametrize("use_chars,skip", [(True, True), (False, False)])
def test_fast_path_matches_plain_path(use_chars, skip):
    # dropout 0: the two paths would draw different dropout masks
    # clips that bind (random states ~ N(0, 1)): their gradient masks count
    lstm = {"dim": 16, "projection_dim": 8, "n_layers": 2,
            "use_skip_connections": skip, "cell_clip": 0.5, "proj_clip": 0.1}
    options = fixture_options(use_chars=use_chars, dropout=0.0, lstm=lstm,
                              n_tokens_vocab=32, unroll_steps=T)
    tf.keras.utils.set_random_seed(3)
    fast = LanguageModel.from_options(options).build_all()
    plain = LanguageModel.from_options(options, unroll_windows=False,
                                       dedup_tokens=False).build_all()
    assert fast.unroll_windows and fast.dedup_tokens
    for source, target in zip(fast.variables, plain.variables):
        target.assign(source)
    batch = _batch(0, use_chars)
    rng = np.random.default_rng(1)
    states = {
        d: [(tf.constant(rng.normal(size=(B, 16)), tf.float32),
             tf.constant(rng.normal(size=(B, 8)), tf.float32))
            for _ in range(2)]
        for d in ("forward", "backward")
    }
    # full softmax (training=False): same loss function, no sampling noise
    for fn in (_loss_grads_states, tf.function(_loss_grads_states)):
        out_fast, grads_fast = fn(fast, batch, states, False)
        out_plain, grads_plain = fn(plain, batch, states, False)
        np.testing.assert_allclose(out_fast["loss"], out_plain["loss"],
                                   rtol=1e-6)
        assert len(grads_fast) == len(grads_plain) == len(
            fast.trainable_variables)
        for v, gf, gp in zip(fast.trainable_variables, grads_fast,
                             grads_plain):
            assert float(tf.reduce_max(tf.abs(gp))) > 0, v.path
            np.testing.assert_allclose(gf, gp, rtol=1e-5, atol=1e-6,
                                       err_msg=v.path)
        for d in ("forward", "backward"):
            for (cf, hf), (cp, hp) in zip(out_fast["final_states"][d],
                                          out_plain["final_states"][d]):
                np.testing.assert_allclose(cf, cp, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(hf, hp, rtol=1e-5, atol=1e-6)


#: the window's settings: chunks of 5 and 1 step with XLA gates (the
#: defaults), one chunk of plain TensorFlow ops, three chunks
WINDOWS = [(5, True), (None, False), (2, True)]
#: the stacks: binding clips, no clips and a wider projection, clips and
#: states zeroed where sentences start
STACKS = [(8, 0.1, False), (16, None, False), (8, 0.1, True)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "projection_dim,clip,with_resets,chunk_steps,fused",
    # every pair; the quick tier runs the diagonal, which has each
    # window setting and each stack once
    [pytest.param(*stack, *window,
                  marks=() if i == j else pytest.mark.slow)
     for j, window in enumerate(WINDOWS) for i, stack in enumerate(STACKS)])
def test_unrolled_stack_matches_while_loop_stack(projection_dim, clip,
                                                 with_resets, chunk_steps,
                                                 fused):
    """Outputs, final states and every gradient (the hand-written backward
    pass) against autodiff of :class:`LSTMStack`, with binding clips and
    with states zeroed where sentences start; the window in pipeline
    chunks or whole, its gate math fused by XLA or not."""
    keras.utils.set_random_seed(5)  # the weights, whatever ran before
    stack = LSTMStack(16, projection_dim, 2, cell_clip=clip, proj_clip=clip,
                      use_skip_connections=True, name="s")
    stack.build((None, None, projection_dim))
    rng = np.random.default_rng(5)
    x = tf.constant(rng.normal(size=(B, T, projection_dim)), tf.float32)
    states = [(tf.constant(rng.normal(size=(B, 16)), tf.float32),
               tf.constant(rng.normal(size=(B, projection_dim)), tf.float32))
              for _ in range(2)]
    # a loss that weighs every output and final state differently
    weights = [tf.constant(rng.normal(size=(B, T, projection_dim)),
                           tf.float32) for _ in range(2)]

    def loss_and_grads(run):
        with tf.GradientTape() as tape:
            tape.watch([x, states])
            outputs, final = run()
            loss = sum(tf.reduce_sum(o * w) for o, w in zip(outputs, weights))
            loss += sum(tf.reduce_sum(tf.sin(c)) + tf.reduce_sum(h * h)
                        for c, h in final)
        grads = tape.gradient(loss, [x, states, stack.trainable_variables])
        return outputs, final, tf.nest.flatten(grads)

    resets = None
    if with_resets:
        starts = np.zeros((B, T), np.float32)
        starts[0, 0] = starts[0, 3] = starts[1, T - 1] = starts[2, 2] = 1.0
        resets = tf.constant(starts)
    expected = loss_and_grads(lambda: stack(x, tf.fill([B], T), states,
                                            resets=resets))
    got = loss_and_grads(lambda: run_stacks_unrolled(
        [stack], [x], [states], resets=None if resets is None else [resets],
        chunk_steps=chunk_steps, fused_gates=fused)[0])
    if with_resets:  # row 0 restarts at step 0: its c0, h0 get no gradient
        d_c0, d_h0 = expected[2][1], expected[2][2]  # layer 0, (B, U), (B, P)
        assert float(tf.reduce_max(tf.abs(d_c0[0]))) == 0.0
        assert float(tf.reduce_max(tf.abs(d_h0[0]))) == 0.0
        # the other rows' do (a binding cell clip at step 0 can stop it in
        # one row, not in all)
        assert float(tf.reduce_max(tf.abs(d_c0[1:]))) > 0.0
        no_reset = loss_and_grads(lambda: stack(x, tf.fill([B], T), states))
        assert not np.allclose(no_reset[0][1], expected[0][1])
    if clip:  # the clips bind somewhere, so their gradient masks matter
        layer0_c = expected[1][0][0]  # (B, U)
        layer0_h = expected[0][0]  # (B, T, P)
        for clipped in (layer0_c, layer0_h):
            assert float(tf.reduce_max(tf.abs(clipped))) == pytest.approx(
                clip)
    for e, g in zip(tf.nest.flatten(expected), tf.nest.flatten(got)):
        assert e.shape == g.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_unrolled_needs_a_static_window():
    fn = tf.function(lambda z: lstm_window(
        z, tf.zeros((1, 1, 16)), tf.zeros((1, 1, 8)), tf.zeros((1, 8, 64)),
        tf.zeros((1, 16, 8))))
    with pytest.raises(ValueError, match="window length .* must be static"):
        fn.get_concrete_function(tf.TensorSpec((1, 1, None, 64)))


def test_batched_stacks_need_the_same_options():
    stacks = [LSTMStack(16, 8, 2, name="a"), LSTMStack(16, 8, 1, name="b")]
    for stack in stacks:
        stack.build((None, None, 8))
    x = tf.zeros((1, T, 8))
    with pytest.raises(ValueError, match="stack b differs from a"):
        run_stacks_unrolled(stacks, [x, x])


def test_config_round_trip_keeps_the_switches():
    options = fixture_options(use_chars=True, n_tokens_vocab=32)
    lm = LanguageModel.from_options(options, unroll_windows=False,
                                    window_chunk_steps=None,
                                    fused_gates=False)
    clone = LanguageModel.from_config(lm.get_config())
    assert clone.unroll_windows is False and clone.dedup_tokens is True
    assert clone.window_chunk_steps is None and clone.fused_gates is False
    assert clone.get_config() == lm.get_config()


def _train_direction_losses(train_dir, options, n_steps, dropout_seed,
                            **model_kwargs):
    """Per-step ``{direction: loss}`` of whole training steps (sampled
    softmax, dropout, global-norm clip, Adagrad) on the fixture corpus."""
    lm, step, batches, states = training_run(
        train_dir, options, dropout_seed=dropout_seed, **model_kwargs)
    losses = []
    for _ in range(n_steps):
        _, _, states, direction_losses = step(next(batches), states)
        losses.append({d: float(v) for d, v in direction_losses.items()})
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("use_chars,skip", [
    # the char model's run (32 s on the AVX2 EPYC) is nightly: the full
    # tier checks the dropout on the token model, and the char model's
    # fast and plain paths without dropout
    pytest.param(True, True, marks=pytest.mark.nightly), (False, False)])
def test_fast_and_plain_training_agree_with_dropout(train_dir, use_chars,
                                                     skip):
    # 5 sentences of 134 tokens are 139 targets a pass, 20 a step: the
    # stream wraps into its second epoch (a reshuffle) during step 7
    options = fixture_options(use_chars=use_chars, skip=skip, dropout=0.3,
                              all_clip_norm_val=1.0)
    n_steps = 12
    fast = _train_direction_losses(train_dir, options, n_steps, 7)
    plain = _train_direction_losses(train_dir, options, n_steps, 7,
                                    unroll_windows=False, dedup_tokens=False)
    for step, (f, p) in enumerate(zip(fast, plain), 1):
        assert set(f) == {"forward", "backward"}
        for d in f:
            np.testing.assert_allclose(
                f[d], p[d], rtol=2e-5, err_msg=f"step {step}, {d}")
    # the masks matter: another dropout seed gives other losses
    other = _train_direction_losses(train_dir, options, 2, 8)
    assert other[0]["backward"] != pytest.approx(fast[0]["backward"],
                                                 rel=1e-4)
    assert other[0]["forward"] != pytest.approx(fast[0]["forward"],
                                                rel=1e-4)
