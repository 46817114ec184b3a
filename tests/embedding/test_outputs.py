"""``output="mix"``: a task's ``gamma * sum_j s_j h_j`` per token, checked
against a numpy mix of the ``"all"`` output of the bilm-tf fixture model,
and a trained ScalarMix's own output on those layers."""

import json

import numpy as np
import pytest

from bilm_keras._utils.settings import SettingError
from bilm_keras.embedding.outputs import (
    EmbeddingSpec,
    mix_weights_from_logits,
)
from bilm_keras.layers.scalar_mix import ScalarMix


@pytest.fixture(scope="module")
def bilm(fixture_bilm):
    """The session's stateless fixture model (its graphs traced once)."""
    return fixture_bilm


@pytest.fixture(scope="module")
def sentences(model_dir):
    with open(model_dir / "lm_embeddings_sentences.json") as f:
        raw = json.load(f)
    # the fixture's sentences, plus one of no tokens
    return [s.split() for column in raw for s in column][:6] + [[]]


@pytest.fixture(scope="module")
def all_layers(bilm, sentences):
    return bilm.embed_sentences(sentences, batch_size=4)


def _numpy_mix(layers, s, gamma):
    """``gamma * sum_j s_j h_j`` in float64, independently of the code."""
    return gamma * np.einsum("k,knd->nd", np.asarray(s, np.float64),
                             layers.astype(np.float64))


def _softmax(w):
    e = np.exp(np.asarray(w, np.float64))
    return e / e.sum()


def test_mix_weights_equal_a_numpy_mix_of_all(bilm, sentences, all_layers):
    s, gamma = [0.2, 0.5, 0.3], 0.7
    got = bilm.embed_sentences(sentences, batch_size=4, output="mix",
                               mix_weights=s, gamma=gamma)
    for layers, mixed in zip(all_layers, got):
        assert mixed.dtype == np.float32
        assert mixed.shape == layers.shape[1:]  # (n_tokens, D)
        np.testing.assert_allclose(mixed, _numpy_mix(layers, s, gamma),
                                   rtol=1e-6, atol=1e-6)


def test_mix_weights_are_used_as_given(bilm, sentences, all_layers):
    # not normalised, negative: the task's s_j are what they are
    s = [2.0, -1.0, 0.25]
    got = list(bilm.iter_embeddings(sentences, output="mix", mix_weights=s,
                                    chunk_size=3))
    for layers, mixed in zip(all_layers, got):
        np.testing.assert_allclose(mixed, _numpy_mix(layers, s, 1.0),
                                   rtol=1e-6, atol=1e-6)


def test_mix_logits_of_chosen_layers(bilm, sentences, all_layers):
    w = np.array([0.4, -1.3])  # raw weights of layers [2, 0], in that order
    got = bilm.embed_sentences(sentences, output="mix", layers=[2, 0],
                               mix_logits=w, gamma=1.5)
    s = _softmax(w)  # the + 1/K of weight_layers cancels in a softmax
    for layers, mixed in zip(all_layers, got):
        np.testing.assert_allclose(
            mixed, _numpy_mix(layers[[2, 0]], s, 1.5), rtol=1e-6, atol=1e-6)


def test_trained_scalar_mix_equals_the_layer_itself(bilm, sentences,
                                                    all_layers):
    import tensorflow as tf

    mix = ScalarMix(3, name="task_ELMo")
    mix.build()
    mix.scalar_weights.assign([0.3, -1.2, 0.8])  # as after training
    mix.gamma.assign([1.7])
    arguments = mix.mix_arguments()
    assert arguments.keys() == {"mix_logits", "gamma"}
    got = bilm.embed_sentences(sentences, output="mix", **arguments)
    for layers, mixed in zip(all_layers, got):
        n = layers.shape[1]
        want = mix(tf.constant(layers[None]), tf.ones((1, n), bool))
        np.testing.assert_allclose(mixed, want.numpy()[0], rtol=1e-6,
                                   atol=1e-6)


def test_scalar_mix_forms():
    top = ScalarMix(3, use_top_only=True)
    top.build()
    top.gamma.assign([0.5])
    assert top.mix_arguments() == {"mix_weights": [0.0, 0.0, 1.0],
                                   "gamma": 0.5}
    normed = ScalarMix(3, do_layer_norm=True, name="normed")
    normed.build()
    with pytest.raises(ValueError, match=r"normed: do_layer_norm=True "
                                         r"normalises by statistics of the "
                                         r"whole batch"):
        normed.mix_arguments()


def test_logits_are_softmax_of_w_plus_one_over_k():
    w = [0.3, -1.2, 0.8]
    np.testing.assert_allclose(mix_weights_from_logits(w), _softmax(w),
                               rtol=1e-12)
    assert mix_weights_from_logits([1000.0, 0.0]).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("kwargs,match", [
    (dict(output="all", mix_weights=[1, 0, 0]),
     r"mix_weights: only with output 'mix', found output 'all'"),
    (dict(output="average", gamma=2.0),
     r"gamma: only with output 'mix', found output 'average'"),
    (dict(output="mix"), r"mix_weights: output 'mix' takes either "
                         r"mix_weights .* or mix_logits .*, found neither"),
    (dict(output="mix", mix_weights=[1, 0, 0], mix_logits=[0, 0, 0]),
     r"mix_weights: .*found both"),
    (dict(output="mix", mix_weights=[0.5, 0.5]),
     r"mix_weights: expected 3 values, one per layer mixed \[0, 1, 2\], "
     r"found 2: \[0.5, 0.5\]"),
    (dict(output="mix", mix_logits=[0, float("nan"), 0]),
     r"mix_logits: expected finite numbers, found \[0, nan, 0\]"),
    (dict(output="mix", mix_weights="0.2 0.8 0"),
     r"mix_weights: expected a list of numbers, found '0.2 0.8 0'"),
    (dict(output="mix", mix_weights=[1, 0, 0], gamma=float("inf")),
     r"gamma: expected a finite number, found inf"),
])
def test_bad_mix_arguments(kwargs, match):
    # built, then resolved for a model of 2 LSTM layers (3 to mix)
    with pytest.raises(SettingError, match=match) as error:
        EmbeddingSpec(**kwargs).resolve(n_lm_layers=2)
    assert error.value.field == match.split(":")[0]  # the field, named


def test_bad_mix_is_reported_before_embedding(bilm):
    with pytest.raises(ValueError, match=r"mix_weights: expected 2 values, "
                                         r"one per layer mixed \[1, 2\]"):
        bilm.embed_sentences([["a"]], output="mix", layers=[1, 2],
                             mix_weights=[1, 0, 0])


# ------------------------------------------------ the value itself
def test_spec_is_a_frozen_value_normalised_when_built():
    spec = EmbeddingSpec(output="mix", layers=[2, 0],
                         mix_logits=np.array([0.4, -1.3]), gamma=2)
    assert spec == EmbeddingSpec(output="mix", layers=(2, 0),
                                 mix_logits=(0.4, -1.3), gamma=2.0)
    assert hash(spec) == hash(EmbeddingSpec(
        output="mix", layers=(2, 0), mix_logits=(0.4, -1.3), gamma=2.0))
    with pytest.raises(AttributeError):
        spec.gamma = 1.0
    resolved = spec.resolve(n_lm_layers=2)
    assert resolved.layer_ids == (2, 0) and resolved.mix.form == "logits"
    np.testing.assert_allclose(resolved.mix.weights, _softmax([0.4, -1.3]),
                               rtol=1e-12)
    assert EmbeddingSpec(output="top").resolve(2).layer_ids == (2,)
    assert EmbeddingSpec().resolve(1).layer_ids == (0, 1)


@pytest.mark.parametrize("kwargs,field", [
    (dict(output="mean"), "output"),
    (dict(dtype="int8"), "dtype"),
    (dict(layers="1 2"), "layers"),
    (dict(gamma=0.5), "gamma"),
    (dict(output="mix", mix_weights=[1, 0, 0], gamma="2"), "gamma"),
])
def test_spec_errors_name_their_field_when_built(kwargs, field):
    with pytest.raises(SettingError, match=f"^{field}: ") as error:
        EmbeddingSpec(**kwargs)
    assert error.value.field == field
    assert str(error.value) == f"{field}: {error.value.reason}"


def test_spec_or_keywords_not_both():
    from bilm_keras.bidirectional_language_model import embedding_spec

    spec = EmbeddingSpec(output="top")
    assert embedding_spec(spec, output="all") is spec
    assert embedding_spec(None, output="top") == spec
    with pytest.raises(SettingError, match=r"^spec: expected the settings "
                                           r"either as spec or as keyword "
                                           r"arguments, found spec and "
                                           r"layers"):
        embedding_spec(spec, layers=[1])
    with pytest.raises(TypeError, match="spec: expected an EmbeddingSpec"):
        embedding_spec({"output": "top"})


def test_spec_gives_what_the_keywords_give(bilm, sentences, all_layers):
    spec = EmbeddingSpec(output="mix", layers=(2, 0), mix_weights=(0.3, 0.7),
                         gamma=0.5, dtype="float16")
    by_keywords = bilm.embed_sentences(sentences, output="mix",
                                       layers=[2, 0], mix_weights=[0.3, 0.7],
                                       gamma=0.5)
    by_spec = bilm.embed_sentences(sentences, spec=spec)
    # streamed in chunks of 3: other batch-mates than one call, so float32
    # round-off may differ there; the same chunks by keywords are the bits
    streamed = list(bilm.iter_embeddings(sentences, spec=spec, chunk_size=3))
    streamed_by_keywords = list(bilm.iter_embeddings(
        sentences, output="mix", layers=[2, 0], mix_weights=[0.3, 0.7],
        gamma=0.5, chunk_size=3))
    for layers, want, got, got_streamed, want_streamed in zip(
            all_layers, by_keywords, by_spec, streamed,
            streamed_by_keywords):
        assert got.dtype == np.float16 and got_streamed.dtype == np.float16
        np.testing.assert_array_equal(got, want.astype(np.float16))
        np.testing.assert_array_equal(got_streamed,
                                      want_streamed.astype(np.float16))
        np.testing.assert_allclose(got_streamed.astype(np.float32),
                                   want.astype(np.float32), atol=2e-3)
        np.testing.assert_allclose(
            got, _numpy_mix(layers[[2, 0]], [0.3, 0.7], 0.5), atol=2e-3)
