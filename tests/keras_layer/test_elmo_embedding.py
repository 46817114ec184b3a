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
                                   atol=1e-6)
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


def test_a_model_holding_it_is_not_compiled_with_xla(mix_layer):
    # what compile(jit_compile="auto") reads on a GPU: every layer's flag
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, mix_layer(text))
    assert not all(layer.supports_jit for layer in model._flatten_layers())
    assert not mix_layer.supports_jit


def test_untrained_mix_is_the_mean_and_has_a_mask(mix_layer, layers_layer):
    text = tf.constant(["The cat sat .", "Hi"])
    mixed = mix_layer(text)
    np.testing.assert_allclose(
        mixed.numpy(), layers_layer(text).numpy().mean(axis=1), atol=1e-6)
    np.testing.assert_array_equal(
        mixed._keras_mask.numpy(),
        [[True, True, True, True], [True, False, False, False]])


@pytest.mark.slow
def test_layer_norm_and_dropout_against_numpy(model_dir, layers_layer):
    text = tf.constant(["The cat sat .", "Hi", "a b c d e f"])
    layers = layers_layer(text).numpy()  # (B, 3, T, D)
    layer = ELMoEmbedding.from_pretrained(model_dir, layer_norm=True,
                                          dropout=0.5)
    layer.scalar_mix.scalar_weights.assign([0.5, -0.2, 0.1])
    w = np.exp([0.5, -0.2, 0.1])
    w /= w.sum()
    got = layer(text).numpy()
    for b, n in enumerate((4, 1, 6)):
        x = layers[b, :, :n]  # (3, n, D): one mean, one variance a layer
        mean = x.mean(axis=(1, 2), keepdims=True)
        var = x.var(axis=(1, 2), keepdims=True)
        want = np.einsum("l,lnd->nd", w, (x - mean) / np.sqrt(var + 1e-12))
        np.testing.assert_allclose(got[b, :n], want, rtol=0, atol=1e-5)
        assert not got[b, n:].any()
    dropped = layer(text, training=True).numpy()
    kept = dropped != 0
    assert 0.3 < kept[got != 0].mean() < 0.7
    np.testing.assert_allclose(dropped[kept], 2 * got[kept], rtol=1e-6)


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


@pytest.mark.slow
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


@pytest.mark.slow  # trains or saves a Keras model
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


@pytest.mark.slow  # trains or saves a Keras model
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


# ------------------------------------------------------ save, load, export
SENTENCES = ["The cat sat .", "Hi", "a longer sentence with 北京 in it ."]

CHILD = """
import json, sys
import bilm_keras
import keras
import numpy as np
import tensorflow as tf
path, kind = sys.argv[1], sys.argv[2]
sentences = json.loads(sys.argv[3])
if kind == "keras":
    model = keras.models.load_model(path)
    batch = model.predict(tf.constant(sentences), verbose=0)
    alone = [model.predict(tf.constant([s]), verbose=0)[0].tolist()
             for s in sentences]
    print(json.dumps({"batch": batch.tolist(), "alone": alone}))
else:
    loaded = tf.saved_model.load(path)  # kept: it owns the variables
    served = loaded.serve(tf.constant(sentences))
    print(json.dumps({"batch": np.asarray(served).tolist()}))
"""


def _child(path, kind):
    import json
    import subprocess
    import sys

    from helpers import user_env

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), kind,
         json.dumps(SENTENCES)], capture_output=True, text=True,
        env=user_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def trained_tagger(model_dir, tmp_path_factory):
    """A tagger on a copy of the fixture model, trained a few steps,
    saved as .keras and exported; the copy deleted after."""
    import shutil

    folder = tmp_path_factory.mktemp("keras_save")
    copy = folder / "model"
    shutil.copytree(model_dir, copy)
    keras.utils.set_random_seed(0)
    text = keras.Input(shape=(), dtype="string")
    x = ELMoEmbedding.from_pretrained(copy, l2_coef=0.01)(text)
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(4, return_sequences=True))(x)
    tags = keras.layers.Dense(3, activation="softmax")(x)
    model = keras.Model(text, tags)
    model.compile(keras.optimizers.Adam(0.05),
                  "sparse_categorical_crossentropy")
    labels = np.zeros((3, 8), "int32")
    labels[:, 1] = 1
    model.fit(tf.constant(SENTENCES), labels, epochs=3, batch_size=3,
              verbose=0)
    expected = model.predict(tf.constant(SENTENCES), verbose=0)
    model.save(folder / "tagger.keras")
    model.export(str(folder / "served"), verbose=False)
    shutil.rmtree(copy)
    return folder, model, expected


@pytest.mark.nightly
@pytest.mark.slow
def test_a_keras_file_loads_alone_in_a_fresh_process(trained_tagger):
    folder, model, expected = trained_tagger
    mix = model.get_layer("elmo").scalar_mix.scalar_weights.numpy()
    assert np.abs(mix).max() > 0  # the fit moved the mix
    got = _child(folder / "tagger.keras", "keras")
    batch = np.asarray(got["batch"])
    np.testing.assert_allclose(batch, expected, rtol=0, atol=ATOL)
    for i, s in enumerate(SENTENCES):
        n = len(s.split())
        np.testing.assert_allclose(np.asarray(got["alone"][i])[:n],
                                   batch[i, :n], rtol=0, atol=ATOL)


@pytest.mark.nightly
@pytest.mark.slow
def test_an_exported_savedmodel_serves_strings(trained_tagger):
    folder, _, expected = trained_tagger
    got = np.asarray(_child(folder / "served", "served")["batch"])
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.nightly  # a .keras file and model.export reloaded
@pytest.mark.slow  # traces and writes a SavedModel
def test_a_model_on_ids_exports_and_reloads(mix_layer, tmp_path):
    # the backbone's input, as under every backend: Keras' own export
    ids = mix_layer.token_ids(tf.constant(["The cat sat .", "Hi"])).numpy()
    inputs = keras.Input((None, ids.shape[-1]), dtype="int32")
    model = keras.Model(inputs, mix_layer(inputs))
    want = model.predict(ids, verbose=0)
    model.export(str(tmp_path / "served"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "served"))
    got = served.serve(tf.constant(ids)).numpy()
    assert got.shape == want.shape == (2, 4, P2)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


def test_l2_on_the_mix_reaches_model_losses(model_dir):
    text = keras.Input(shape=(), dtype="string")
    layer = ELMoEmbedding.from_pretrained(model_dir, l2_coef=0.5)
    model = keras.Model(text, layer(text))
    layer.scalar_mix.scalar_weights.assign([1.0, 2.0, 0.0])
    assert len(model.losses) == 1
    np.testing.assert_allclose(float(model.losses[0]), 0.5 * 5.0,
                               rtol=1e-6)


# ----------------------------------------------------------- bad input
def test_a_string_tensor_of_the_wrong_rank(mix_layer):
    with pytest.raises(ValueError, match=r"rank 3"):
        mix_layer(tf.constant([[["a"]]]))


def test_ids_wider_than_the_model(mix_layer):
    with pytest.raises(ValueError,
                       match=r"expected 50 ids per token .* found 51"):
        mix_layer(np.ones((1, 3, 51), "int32"))


@pytest.mark.parametrize("kwargs, match", [
    ({"output": "vectors"}, r"output: expected one of .* found 'vectors'"),
    ({"trainable": "lm"}, r"trainable: expected one of .* found 'lm'"),
    ({"trainable": True}, r"trainable: .* found True"),
])
def test_unknown_choices_fail_before_any_file_is_read(tmp_path, kwargs,
                                                      match):
    with pytest.raises(ValueError, match=match):
        ELMoEmbedding.from_pretrained(tmp_path / "nothing", **kwargs)


def test_arguments_the_layer_does_not_take(model_dir):
    with pytest.raises(TypeError, match=r"unexpected \['precision'\]"):
        ELMoEmbedding.from_pretrained(model_dir, precision="bfloat16")


def test_a_spec_that_does_not_exist(tmp_path):
    from bilm_keras.pretrained import PretrainedModelError

    with pytest.raises(PretrainedModelError, match="nothing"):
        ELMoEmbedding.from_pretrained(str(tmp_path / "nothing"))


def test_a_keras_file_whose_options_disagree_with_its_weights(
        mix_layer, tmp_path):
    import json
    import zipfile

    text = keras.Input(shape=(), dtype="string")
    path = tmp_path / "m.keras"
    keras.Model(text, mix_layer(text)).save(path)
    bad = tmp_path / "bad.keras"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                layer = config["config"]["layers"][1]["config"]
                layer["options"]["lstm"]["dim"] = 24  # the file holds 64
                data = json.dumps(config).encode()
            dst.writestr(item, data)
    # Keras gathers the errors of every object; ours comes first
    with pytest.raises(ValueError, match=r"options disagree with its "
                       r"weights: bilm/forward_lstm/cell0/kernel_t: "
                       r"expected \(96, 32\) from the options, found "
                       r"\(256, 32\)"):
        keras.models.load_model(bad)


@pytest.mark.slow  # trains or saves a Keras model
def test_fit_runs_the_inference_lstms_when_the_lm_is_frozen(
        model_dir, monkeypatch):
    from bilm_keras.layers.lstm_stack import LSTMStack

    calls = {"infer": 0, "call": 0}
    for name in calls:
        original = getattr(LSTMStack, name)

        def counted(self, *args, _name=name, _original=original, **kw):
            calls[_name] += 1
            return _original(self, *args, **kw)
        monkeypatch.setattr(LSTMStack, name, counted)
    # trainable=False takes "mix"'s branch (the LM frozen either way)
    for trainable, path in (("mix", "infer"), ("all", "call")):
        calls.update(infer=0, call=0)
        text = keras.Input(shape=(), dtype="string")
        layer = ELMoEmbedding.from_pretrained(model_dir, trainable=trainable)
        model = keras.Model(text, keras.layers.Dense(2)(layer(text)))
        model.compile("sgd", "mse")
        model.fit(tf.constant(SENTENCES), np.zeros((3, 8, 2)), verbose=0)
        assert calls[path] == 2 and sum(calls.values()) == 2, (trainable,
                                                               calls)


@pytest.mark.nightly  # a .keras file and model.export reloaded, per family
@pytest.mark.slow
@pytest.mark.parametrize("family", ["manylangs", "paddle_baike"])
def test_other_families_save_and_export_with_their_tables(
        family, manylangs_fixtures, paddle_baike_fixtures, tmp_path):
    """The dictionaries travel in the .keras file and the SavedModel."""
    import shutil

    from bilm_keras import convert_manylangs
    from bilm_keras.weights.paddle_conversion import convert_paddle

    if family == "manylangs":
        folder = pathlib.Path(convert_manylangs(
            manylangs_fixtures / "tiny.model",
            tmp_path / "model")["options_file"]).parent
        sentences = ["今天 天氣 真好", "我"]
    else:
        folder = convert_paddle(
            paddle_baike_fixtures / "checkpoint", tmp_path / "model",
            vocab_file=paddle_baike_fixtures / "vocab.txt")["outdir"]
        sentences = ["北京 是 首都", "研究所"]
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, ELMoEmbedding.from_pretrained(folder)(text))
    want = model.predict(tf.constant(sentences), verbose=0)
    model.save(tmp_path / "m.keras")
    model.export(str(tmp_path / "served"), verbose=False)
    shutil.rmtree(folder)
    got = keras.models.load_model(tmp_path / "m.keras").predict(
        tf.constant(sentences), verbose=0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    served = tf.saved_model.load(str(tmp_path / "served"))
    np.testing.assert_allclose(served.serve(tf.constant(sentences)), want,
                               rtol=0, atol=1e-6)
