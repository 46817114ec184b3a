"""Reduced precision (``bilm_keras/layers/precision.py``): how far the
vectors move from float32, bounded on the two fixture models against our
float32 path and against the fixtures' own reference numbers; that the
bounds would catch a broken cast; that float32 stays exact.

The bounds (``tests/helpers.py``, ``assert_near_float32``) come from
measurement (``bench/RESULTS.md``, "Precision"): at
bfloat16 the per-token cosine to float32 is >= 0.99998 at the worst token
of bilm-tf's fixture and of the published-size model with random weights,
and >= 0.99988 on ELMoForManyLangs' fixture (a trained model; median
0.999984); the per-token relative error (the largest ``|x - x_32|`` over
the token's largest ``|x_32|``) is <= 0.018. The bounds leave six to ten
times the measured distance (``1 - cos``): median >= 0.9999, worst >=
0.999, relative error <= 0.05.
"""

import json

import ml_dtypes
import numpy as np
import pytest

import numpy_reference as nr
from bilm_keras import Batcher, BidirectionalLanguageModel
from bilm_keras._utils.settings import SettingError
from bilm_keras.layers.precision import (
    PRECISIONS,
    compute_dtype_of,
    dtype_policy,
    set_precision,
)
from helpers import (
    assert_near_float32,
    load_reference_embeddings,
    near_float32_failures,
)


@pytest.fixture(scope="module")
def fixture_sentences(model_dir):
    sentences, _ = load_reference_embeddings(model_dir)
    return [s for batch in sentences for s in batch]


def _model(model_dir, precision, **kwargs):
    return BidirectionalLanguageModel(
        str(model_dir / "options.json"), str(model_dir / "lm_weights.hdf5"),
        precision=precision, **kwargs)


@pytest.fixture(scope="module")
def bfloat16_bilm(model_dir):
    return _model(model_dir, "bfloat16")


# ------------------------------------------------------------ the values
def test_precisions_and_their_policies():
    assert PRECISIONS[0] == "float32"
    for precision in PRECISIONS:
        # variables always float32: the loaded weights, the master copy
        assert dtype_policy(precision).variable_dtype == "float32"
    assert compute_dtype_of("float32") == "float32"
    assert compute_dtype_of("bfloat16") == "bfloat16"
    assert compute_dtype_of("mixed_bfloat16") == "bfloat16"
    assert compute_dtype_of("mixed_float16") == "float16"
    with pytest.raises(SettingError, match=r"precision: expected one of "
                                         r"float32, .* found 'int8'"):
        dtype_policy("int8")


def test_a_backbone_built_with_a_policy_passes_it_to_every_layer():
    from bilm_keras.models.bilm_backbone import BiLMBackbone

    backbone = BiLMBackbone(16, 8, filters=[[1, 4], [2, 4]], n_highway=1,
                            dtype=dtype_policy("mixed_bfloat16"))
    backbone.build_all()
    layers = list(backbone._flatten_layers())
    assert {layer.compute_dtype for layer in layers} == {"bfloat16"}
    assert {v.dtype for v in backbone.weights} == {"float32"}
    out = backbone(np.ones((2, 3, 50), np.int32))
    assert out["forward"][0].dtype == "float32"


def test_set_precision_reaches_every_layer_and_keeps_float32_variables(
        bfloat16_bilm):
    layers = list(bfloat16_bilm.backbone._flatten_layers())
    assert len(layers) > 8  # backbone, char-CNN, highways, stacks, cells
    assert {layer.compute_dtype for layer in layers} == {"bfloat16"}
    assert {v.dtype for v in bfloat16_bilm.backbone.weights} == {"float32"}


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_float32_is_exact_after_a_round_trip(model_dir, fixture_bilm,
                                             fixture_sentences):
    """A model set to bfloat16 and back computes float32 bit for bit."""
    model = _model(model_dir, "bfloat16")
    set_precision(model.backbone, "float32")  # and back, on the model
    got = model.embed_sentences(fixture_sentences)
    want = fixture_bilm.embed_sentences(fixture_sentences)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ------------------------------------------- bilm-tf's fixture model
@pytest.mark.parametrize("output", [
    "all",  # the quick tier's numeric check of bfloat16
    pytest.param("average", marks=pytest.mark.slow),
    pytest.param("mix", marks=pytest.mark.slow),
])
def test_bilm_tf_fixture_bfloat16_near_float32(
        fixture_bilm, bfloat16_bilm, fixture_sentences, output):
    kwargs = {"mix_weights": [0.2, 0.5, 0.3], "gamma": 2.0} \
        if output == "mix" else {}
    want = fixture_bilm.embed_sentences(fixture_sentences, output=output,
                                        **kwargs)
    got = bfloat16_bilm.embed_sentences(fixture_sentences, output=output,
                                        **kwargs)
    assert all(g.dtype == np.float32 for g in got)
    if output == "all":  # per layer, the token layer included
        for layer in range(want[0].shape[0]):
            assert_near_float32([w[layer] for w in want],
                                [g[layer] for g in got], f"layer {layer}")
        # not float32's numbers: the products did run in bfloat16
        assert max(np.abs(g - w).max() for g, w in zip(got, want)) > 1e-5
    else:
        assert_near_float32(want, got, output)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_bilm_tf_fixture_bfloat16_near_bilm_tfs_reference(model_dir):
    """bilm-tf's test_model.py at bfloat16: ten stateful batches (the
    state carried from batch to batch, the while-loop path) against
    lm_embeddings_{0,1,2}.hdf5, bilm-tf's own float32 numbers."""
    sentences, expected = load_reference_embeddings(model_dir)
    model = _model(model_dir, "bfloat16", stateful=True, max_batch_size=4)
    batcher = Batcher(str(model_dir / "vocab_test.txt"), 50)
    got, want = [], []
    for i in range(10):
        out = model(batcher.batch_sentences([sentences[k][i]
                                             for k in range(3)]))
        lm = out["lm_embeddings"].numpy()
        for k in range(3):
            got.append(lm[k, 2, : len(sentences[k][i])])
            want.append(expected[k][i])
    assert_near_float32(want, got, "top layer, stateful")


# ----------------------------------------- ELMoForManyLangs' fixture model
@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_manylangs_fixture_bfloat16_near_its_reference(manylangs_converted,
                                                       manylangs_reference):
    model = BidirectionalLanguageModel(manylangs_converted["options_file"],
                                       manylangs_converted["weight_file"],
                                       precision="bfloat16")
    sentences = manylangs_reference["sentences"]
    got = model.embed_sentences(sentences, output="all")
    for layer in range(3):
        assert_near_float32([w[layer] for w in manylangs_reference["all"]],
                            [g[layer] for g in got], f"layer {layer}")
    got = model.embed_sentences(sentences, output="average")
    assert_near_float32(manylangs_reference["average"], got, "average")


# ----------------------------------------- the bounds catch broken casts
def _numpy_forward(model_dir, sentences, dtype, scale=1.0):
    """numpy_reference's biLM on the fixture's weights with every value in
    ``dtype`` (weights, products, state and outputs: a cast gone wrong),
    the char embedding scaled by ``scale``; ``(n_tokens, 2P)`` per
    sentence and layer."""
    options = json.loads((model_dir / "options.json").read_text())
    weights = nr.load_hdf5_weights(str(model_dir / "lm_weights.hdf5"))
    weights["char_embed"] = weights["char_embed"] * scale
    ids = nr.sentence_char_ids(sentences, 50)
    with np.errstate(all="ignore"):
        out = nr.bilm_forward(weights, options, char_ids=ids, dtype=dtype)
    return [out["layers"][b, :, 1: n + 1].astype(np.float32)
            for b, n in enumerate(len(s) for s in sentences)]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_the_bounds_catch_a_broken_cast(model_dir, fixture_sentences):
    sentences = fixture_sentences[:12]
    want = _numpy_forward(model_dir, sentences, np.float64)
    # the check itself: float32 passes, so does everything in bfloat16
    # (on this small, clipped model the state's rounding is as small as
    # the products': bench/RESULTS.md has the published size)
    for dtype in (np.float32, ml_dtypes.bfloat16):
        assert not near_float32_failures(
            want, _numpy_forward(model_dir, sentences, dtype), "ok")
    # an 8-bit float (3 bits of mantissa) where bfloat16 was meant
    broken = _numpy_forward(model_dir, sentences, ml_dtypes.float8_e4m3fn)
    assert near_float32_failures(want, broken, "float8")
    # float16 overflowing: inputs 1e4 times as large (products past
    # 65,504) give infinities or NaNs, which float32 represents
    big = _numpy_forward(model_dir, sentences, np.float64, scale=1e4)
    overflowed = _numpy_forward(model_dir, sentences, np.float16, scale=1e4)
    assert all(np.isfinite(b).all() for b in big)
    assert near_float32_failures(big, overflowed, "float16")


# ------------------------------------------------- training, mixed precision
def _loss_and_gradients(lm, batch):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = lm(batch, training=False)["loss"]  # the full softmax
    grads = tape.gradient(loss, lm.trainable_variables)
    return float(loss), [np.asarray(tf.convert_to_tensor(g), np.float64)
                         for g in grads]


def _cosine(a, b):
    return float((a * b).sum() / max(np.linalg.norm(a) * np.linalg.norm(b),
                                     1e-30))


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_mixed_bfloat16_training_gradients(train_dir):
    """The training window's hand-written backward pass at
    mixed_bfloat16 (its products in bfloat16) against autodiff through
    the while loop at mixed_bfloat16 (cosine >= 0.9999 per variable;
    measured >= 0.99999) and against float32 (cosine >= 0.99; measured
    0.9935 for the char-CNN's widest kernel, whose gradient comes through
    every product, >= 0.99996 for the LSTMs and the softmax)."""
    import keras

    from bilm_keras.models.language_model import LanguageModel
    from helpers import fixture_options

    options = fixture_options(use_chars=True, dropout=0.0, skip=True,
                              n_tokens_vocab=64, unroll_steps=6)
    keras.utils.set_random_seed(5)
    models = {name: LanguageModel.from_options(
        options, unroll_windows=name != "plain_bf16").build_all()
        for name in ("float32", "fast_bf16", "plain_bf16")}
    for name in ("fast_bf16", "plain_bf16"):
        for source, target in zip(models["float32"].variables,
                                  models[name].variables):
            target.assign(source)
        set_precision(models[name], "mixed_bfloat16")
    rng = np.random.default_rng(0)
    words = rng.integers(1, 261, size=(12, 10))
    batch = {}
    for suffix in ("", "_reverse"):
        token = rng.integers(0, 12, size=(2, 6))
        batch["token_ids" + suffix] = token + 1
        batch["tokens_characters" + suffix] = words[token]
        batch["next_token_id" + suffix] = rng.integers(0, 64, size=(2, 6))
    batch = {k: v.astype(np.int32) for k, v in batch.items()}
    for suffix in ("", "_reverse"):
        batch["mask" + suffix] = np.ones((2, 6), np.float32)
    results = {name: _loss_and_gradients(lm, batch)
               for name, lm in models.items()}
    loss32, grads32 = results["float32"]
    for name in ("fast_bf16", "plain_bf16"):
        loss, grads = results[name]
        assert abs(loss - loss32) <= 1e-2 * abs(loss32), name
        assert loss != loss32  # the products did run in bfloat16
        for variable, g, g32 in zip(models[name].trainable_variables, grads,
                                    grads32):
            assert _cosine(g, g32) >= 0.99, (name, variable.path)
    for g_fast, g_plain in zip(results["fast_bf16"][1],
                               results["plain_bf16"][1]):
        assert _cosine(g_fast, g_plain) >= 0.9999


def _mixed_run(train_dir, precision):
    """A seeded fixture run at ``precision``: ``(lm, step, batches,
    states)``."""
    import keras
    import tensorflow as tf

    from bilm_keras.data.tf_dataset import make_tf_dataset
    from bilm_keras.data.vocab_for_options import load_vocab
    from bilm_keras.training.inputs import make_dataset
    from bilm_keras.training.model_setup import build_model
    from bilm_keras.training.train_step import make_train_step
    from helpers import fixture_options

    options = fixture_options(use_chars=True, dropout=0.0, unroll_steps=5)
    keras.utils.set_random_seed(0)
    vocab = load_vocab(str(train_dir / "vocab.txt"), options)
    options = options.replace(n_tokens_vocab=vocab.size)
    lm, optimizer = build_model(options, seed=0, precision=precision)
    step = make_train_step(lm, optimizer, tf.distribute.get_strategy(),
                           options, dropout_seed=0, precision=precision)
    data = make_dataset(str(train_dir / "data.txt"), vocab, options, seed=0)
    batches = iter(make_tf_dataset(data, options.batch_size,
                                   options.unroll_steps))
    return lm, optimizer, step, batches, lm.zero_states(options.batch_size)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_mixed_float16_scales_the_loss_and_skips_an_overflow(train_dir):
    lm, optimizer, step, batches, states = _mixed_run(train_dir,
                                                      "mixed_float16")
    assert {layer.compute_dtype for layer in lm._flatten_layers()} == {
        "float16"}
    assert {v.dtype for v in lm.variables} == {"float32"}
    assert {v.dtype for v in optimizer.variables} <= {"float32", "int64"}
    scale = step.loss_scale.scale
    assert float(scale) == 2.0**15
    loss, _, states, _ = step(next(batches), states)
    assert np.isfinite(float(loss)) and float(scale) == 2.0**15
    # a scale past float16's range: the gradients overflow, no weight
    # changes, the scale halves
    scale.assign(3e38)
    before = [v.numpy() for v in lm.trainable_variables]
    step(next(batches), states)
    assert float(scale) == np.float32(3e38) / 2
    for b, v in zip(before, lm.trainable_variables):
        np.testing.assert_array_equal(b, v.numpy())


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_mixed_bfloat16_steps_follow_float32(train_dir):
    """Ten steps of the fixture run at mixed_bfloat16 and at float32 from
    the same weights and batches: the losses stay within 2 % (no loss
    scaling at bfloat16: its range is float32's)."""
    losses = {}
    for precision in ("float32", "mixed_bfloat16"):
        _, _, step, batches, states = _mixed_run(train_dir, precision)
        assert (step.loss_scale is None)
        losses[precision] = []
        for _ in range(10):
            loss, _, states, _ = step(next(batches), states)
            losses[precision].append(float(loss))
    np.testing.assert_allclose(losses["mixed_bfloat16"], losses["float32"],
                               rtol=0.02)
    assert losses["mixed_bfloat16"] != losses["float32"]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_from_pretrained_takes_the_precision(model_dir, fixture_bilm,
                                             fixture_sentences):
    """A model folder by ``from_pretrained(..., precision="bfloat16")``:
    every layer computes in bfloat16, the vectors within the bounds."""
    model = BidirectionalLanguageModel.from_pretrained(
        str(model_dir), precision="bfloat16", progress=False)
    assert {layer.compute_dtype
            for layer in model.backbone._flatten_layers()} == {"bfloat16"}
    assert_near_float32(fixture_bilm.embed_sentences(fixture_sentences,
                                                     output="average"),
                        model.embed_sentences(fixture_sentences,
                                              output="average"), "average")
