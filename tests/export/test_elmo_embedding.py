"""ELMoEmbedding: the biLM as a layer of a user's Keras model, against
bilm-tf's reference embeddings and the embedding path, independent of
its batch, with a mask Keras' own layers read."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher, ELMoEmbedding
from helpers import REPO_ROOT, load_reference_embeddings, run_layer_test

P2 = 32  # the fixture's 2 * projection_dim
ATOL = 1e-5


@pytest.fixture(scope="module")
def layers_layer(model_dir):
    return ELMoEmbedding.from_pretrained(model_dir, output="layers")


@pytest.fixture(scope="module")
def mix_layer(model_dir):
    return ELMoEmbedding.from_pretrained(model_dir)


def _padded(sentences, width=None):
    width = width or max(map(len, sentences))
    return tf.constant([s + [""] * (width - len(s)) for s in sentences])


def test_top_layer_equals_bilm_tf_reference(layers_layer, model_dir):
    # bilm-tf's first batch of each list started from zero states
    sentences, expected = load_reference_embeddings(model_dir)
    firsts = [sentences[k][0] for k in range(3)]
    got = layers_layer(tf.constant([" ".join(s) for s in firsts])).numpy()
    for k in range(3):
        want = expected[k][0]
        np.testing.assert_allclose(got[k, 2, :len(want)], want, rtol=0,
                                   atol=ATOL)
        assert not got[k, :, len(want):].any()


def test_layers_equal_embed_sentences(layers_layer, fixture_bilm):
    sentences = [["The", "cat", "sat", "."], ["Hi"], [], ["北京", "!"]]
    want = fixture_bilm.embed_sentences(sentences)
    for inputs in (tf.constant([" ".join(s) for s in sentences]),
                   _padded(sentences, width=6)):
        got = layers_layer(inputs).numpy()
        for i, s in enumerate(sentences):
            np.testing.assert_allclose(got[i, :, :len(s)], want[i], rtol=0,
                                       atol=1e-6)


def test_untrained_mix_is_the_mean_and_has_a_mask(mix_layer, layers_layer):
    text = tf.constant(["The cat sat .", "Hi"])
    mixed = mix_layer(text)
    np.testing.assert_allclose(
        mixed.numpy(), layers_layer(text).numpy().mean(axis=1), atol=1e-6)
    np.testing.assert_array_equal(
        mixed._keras_mask.numpy(),
        [[True, True, True, True], [True, False, False, False]])


@pytest.mark.parametrize("trainable, n_trainable", [
    ("mix", 2), ("all", None), (False, 0)])
def test_trainable_choices(model_dir, trainable, n_trainable):
    layer = ELMoEmbedding.from_pretrained(model_dir, trainable=trainable)
    sizes = [int(np.prod(w.shape)) for w in layer.trainable_weights]
    if trainable == "mix":  # L + 1 weights, gamma
        assert sorted(sizes) == [1, 3]
    elif trainable == "all":
        assert len(layer.trainable_weights) == len(layer.weights)
    else:
        assert sizes == []


def test_vectors_do_not_depend_on_the_batch(mix_layer, model_dir):
    alone = mix_layer(tf.constant(["The cat sat ."])).numpy()[0]
    batch = ["Hi", "The cat sat .", "a much longer sentence than the others"
             " here", ""]
    for training in (False, True):
        got = mix_layer(tf.constant(batch), training=training).numpy()
        np.testing.assert_allclose(got[1, :4], alone, rtol=0, atol=ATOL)
        tokens = _padded([s.split() for s in batch], width=12)
        got = mix_layer(tokens, training=training).numpy()
        np.testing.assert_allclose(got[1, :4], alone, rtol=0, atol=ATOL)
    ids = Batcher(str(model_dir / "vocab_test.txt"), 50).batch_sentences(
        [s.split() for s in batch])
    np.testing.assert_allclose(mix_layer(ids).numpy()[1, :4], alone,
                               rtol=0, atol=ATOL)
    # fine-tuning: the differentiable path, in training
    tuned = ELMoEmbedding.from_pretrained(model_dir, trainable="all")
    got = tuned(tf.constant(batch), training=True).numpy()
    np.testing.assert_allclose(got[1, :4], alone, rtol=0, atol=ATOL)


def test_the_mask_reaches_a_bidirectional_lstm(mix_layer):
    keras.utils.set_random_seed(0)
    for inputs, alone, padded in (
            (keras.Input(shape=(), dtype="string"),
             tf.constant(["The cat sat ."]),
             tf.constant(["The cat sat .", "one two three four five six"])),
            (keras.Input(shape=(None,), dtype="string"),
             _padded([["The", "cat", "sat", "."]]),
             _padded([["The", "cat", "sat", "."]], width=9))):
        rnn = keras.layers.Bidirectional(
            keras.layers.LSTM(4, return_sequences=True))
        model = keras.Model(inputs, rnn(mix_layer(inputs)))
        a = model.predict(alone, verbose=0)[0]
        b = model.predict(padded, verbose=0)[0, :4]
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_layer_contract(mix_layer, model_dir, tmp_path):
    ids = Batcher(str(model_dir / "vocab_test.txt"), 50).batch_sentences(
        [["The", "cat", "sat", "."], ["Hi"]]).astype("int32")
    config = mix_layer.get_config()
    del config["name"]
    run_layer_test(ELMoEmbedding, config, ids, (2, 4, P2), tmp_path)


# ------------------------------------------------- other families' models
@pytest.mark.slow
def test_a_converted_manylangs_model(manylangs_converted,
                                     manylangs_reference):
    ref = manylangs_reference
    folder = str(pathlib.Path(manylangs_converted["options_file"]).parent)
    layer = ELMoEmbedding.from_pretrained(folder, output="layers")
    sentences = ref["sentences"]
    # tokens with spaces inside cannot go through whitespace splitting
    got = layer(_padded(sentences)).numpy()
    for i, s in enumerate(sentences):
        want = ref["all"][i]  # (3, n, 2P), upstream's, zero states
        np.testing.assert_allclose(got[i, :, :len(s)], want, rtol=0,
                                   atol=ATOL, err_msg=f"sentence {i}")


@pytest.mark.slow
def test_a_converted_paddle_baike_model(paddle_baike_converted,
                                        paddle_baike_fixtures):
    sentences = (paddle_baike_fixtures / "sentences.txt").read_text(
        "utf-8").splitlines()
    with np.load(paddle_baike_fixtures / "reference.npz") as f:
        ref = dict(f)
    layer = ELMoEmbedding.from_pretrained(paddle_baike_converted["outdir"],
                                          output="layers")
    got = layer(tf.constant(sentences)).numpy()
    for i, sentence in enumerate(sentences):
        n = len(sentence.split())
        words = slice(1, n + 1)
        emb = ref[f"s{i}_embedding"][words]
        np.testing.assert_allclose(got[i, 0, :n], np.concatenate(
            [emb, emb], -1), rtol=0, atol=ATOL)
        for k in (1, 2):
            np.testing.assert_allclose(got[i, k, :n], np.concatenate(
                [ref[f"s{i}_fw_{k}"][words],
                 ref[f"s{i}_bw_{k}"][::-1][words]], -1), rtol=0, atol=ATOL)


@pytest.mark.slow
def test_a_paddlenlp_pdparams(tmp_path):
    fixtures = REPO_ROOT / "tests" / "fixtures" / "paddlenlp_elmo"
    layer = ELMoEmbedding.from_pretrained(
        fixtures / "elmo.pdparams", output="layers", cache_dir=tmp_path)
    sentences = (fixtures / "sentences.txt").read_text(
        "utf-8").splitlines()
    got = layer(tf.constant(sentences)).numpy()
    with np.load(fixtures / "embeddings.npz") as f:
        for i, sentence in enumerate(sentences):
            want = f[f"sentence_{i}"]  # (3, n, 2P): [emb, emb], ...
            n = len(sentence.split())
            np.testing.assert_allclose(got[i, :, :n], want, rtol=0,
                                       atol=ATOL)
