"""ELMoEmbedding's token cache: a training call with the biLM frozen reads
known tokens' vectors from it and gives what the char-CNN gives, whatever
the cache holds, and forgets them when the weights change."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import ELMoEmbedding

BATCH = ["The cat sat .", "Hi there cat", ""]


@pytest.fixture
def layer(model_dir):
    return ELMoEmbedding.from_pretrained(model_dir, output="layers")


def _cached(layer) -> int:
    """Tokens the cache holds, its checksum entry not counted."""
    return max(int(layer._token_cache.table.size()) - 1, 0)


@pytest.mark.slow
def test_training_calls_give_the_char_cnn_vectors(layer):
    expected = layer(tf.constant(BATCH)).numpy()  # outside training
    assert _cached(layer) == 0
    step = tf.function(lambda x: layer(x, training=True))
    first = step(tf.constant(BATCH)).numpy()  # every token computed
    # <S>, </S> and the 6 distinct words, and the padding token
    assert _cached(layer) == 9
    second = step(tf.constant(BATCH)).numpy()  # every token from the cache
    np.testing.assert_allclose(first, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(second, expected, rtol=0, atol=1e-6)
    # some known, some not
    mixed = ["the dog sat .", "Hi"]
    np.testing.assert_allclose(step(tf.constant(mixed)).numpy(),
                               layer(tf.constant(mixed)).numpy(),
                               rtol=0, atol=1e-6)
    assert _cached(layer) == 11


@pytest.mark.slow
def test_a_full_cache_computes_the_rest(model_dir):
    layer = ELMoEmbedding.from_pretrained(model_dir, output="layers",
                                          token_cache_size=3)
    expected = layer(tf.constant(BATCH)).numpy()
    for _ in range(2):
        got = layer(tf.constant(BATCH), training=True).numpy()
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        assert _cached(layer) == 3


@pytest.mark.slow
def test_new_weights_empty_it(layer):
    layer(tf.constant(BATCH), training=True)
    highway = layer.bilm.token_embedder.weights[-2]
    highway.assign(highway * 2.0)
    expected = layer(tf.constant(BATCH)).numpy()
    got = layer(tf.constant(BATCH), training=True).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_only_a_frozen_bilm_uses_it(model_dir):
    tuned = ELMoEmbedding.from_pretrained(model_dir, trainable="all")
    tuned(tf.constant(BATCH), training=True)
    assert _cached(tuned) == 0
    off = ELMoEmbedding.from_pretrained(model_dir, token_cache_size=0)
    assert off._token_cache is None
    assert off.get_config()["token_cache_size"] == 0
    with pytest.raises(ValueError, match="token_cache_size"):
        ELMoEmbedding.from_pretrained(model_dir, token_cache_size=-1)


@pytest.mark.nightly  # a .keras file and a SavedModel reloaded
@pytest.mark.slow  # trains, saves and exports a Keras model
def test_no_saved_file_holds_it(model_dir, tmp_path):
    text = keras.Input(shape=(), dtype="string")
    layer = ELMoEmbedding.from_pretrained(model_dir)
    model = keras.Model(text, keras.layers.Dense(2)(layer(text)))
    model.compile("adam", "mse")
    model.fit(tf.constant(BATCH), np.zeros((3, 4, 2)), epochs=2, verbose=0)
    assert _cached(layer) == 9
    model.export(str(tmp_path / "served"), verbose=False)
    names = [name for name, _ in tf.train.list_variables(
        str(tmp_path / "served" / "variables" / "variables"))]
    assert not [n for n in names if "keys" in n or "table" in n]
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert _cached(loaded.get_layer("elmo")) == 0


MIRRORED = r"""
import json, sys
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from bilm_keras import Batcher, ELMoEmbedding

model_dir = sys.argv[1]
sentences = [s.split() for s in ["The cat sat .", "Hi there", "a b c d"] * 4]
ids = Batcher(f"{model_dir}/vocab_test.txt", 50).batch_sentences(
    sentences).astype("int32")
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    inputs = keras.Input(shape=(None, 50), dtype="int32")
    layer = ELMoEmbedding.from_pretrained(model_dir)
    model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)))
    model.compile(keras.optimizers.Adam(0.1), "mse")
model.fit(ids, np.ones((12, ids.shape[1] - 2, 2), "float32"), epochs=2,
          batch_size=4, verbose=0)
difference = np.abs(layer(ids, training=True).numpy()
                    - layer(ids).numpy()).max()
print(json.dumps(dict(
    cached=int(layer._token_cache.table.size()) - 1,
    difference=float(difference),
    mix_moved=float(np.abs(layer.scalar_mix.scalar_weights.numpy()).max()))))
"""


@pytest.mark.nightly  # several logical devices
@pytest.mark.slow  # a subprocess: logical devices before TensorFlow starts
def test_a_mirrored_fit_on_ids_shares_one_cache(model_dir):
    """Two replicas fill one cache. Ids, not strings: Keras 3 cannot take
    string inputs under MirroredStrategy (tensorflow#80951)."""
    import json
    import subprocess

    from helpers import REPO_ROOT, python_argv, user_env

    env = dict(user_env(), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        python_argv(env) + ["-c", MIRRORED, str(model_dir)], cwd=REPO_ROOT,
        env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # <S>, </S>, 10 distinct words and the padding token
    assert report["cached"] == 13
    assert report["difference"] <= 1e-6
    assert report["mix_moved"] > 0
