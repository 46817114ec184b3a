"""ELMoPreprocessor against the batchers (Batcher, ManyLangsBatcher,
TokenBatcher), in tf.data and on NumPy, under every Keras backend."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher, ELMoPreprocessor, TokenBatcher
from bilm_keras.data.batcher_for_options import batcher_for_options
from bilm_keras.data.manylangs_dictionaries import read_dictionaries
from bilm_keras.options import BiLMOptions
from helpers import REPO_ROOT, require_installed

#: whitespace of every kind, boundary tokens, an empty sentence, a token
#: longer than max_characters_per_token
EXTRA = ["<S> </S> <UNK> x", "", "tab\there  \u3000ideographic",
         "x" * 80 + " 中" * 3]


@pytest.fixture(scope="module")
def sentences(model_dir):
    with open(model_dir / "lm_embeddings_sentences.json",
              encoding="utf-8") as f:
        return json.load(f)[0] + EXTRA


def _padded(sentences, width):
    tokens = np.full((len(sentences), width), "", dtype=object)
    for i, sentence in enumerate(sentences):
        tokens[i, : len(sentence.split())] = sentence.split()
    return tokens


def test_char_ids_equal_batcher(sentences, model_dir):
    options = BiLMOptions.from_json(model_dir / "options.json")
    preprocessor = ELMoPreprocessor.from_options(options)
    expected = Batcher(None, 50).batch_sentences(
        [s.split() for s in sentences])
    np.testing.assert_array_equal(preprocessor(sentences), expected)
    # padded tokens keep their width: two columns more than the longest
    width = max(len(s.split()) for s in sentences) + 2
    ids = preprocessor(_padded(sentences, width))
    assert ids.shape == (len(sentences), width + 2, 50)
    np.testing.assert_array_equal(ids[:, : expected.shape[1]], expected)
    assert not np.any(ids[:, expected.shape[1]:])


def test_word_ids_equal_token_batcher(sentences, model_dir):
    vocab_file = str(model_dir.parent / "data" / "vocab_test.txt")
    batcher = TokenBatcher(vocab_file)
    words = [batcher._lm_vocab.id_to_word(i)
             for i in range(batcher._lm_vocab.size)]
    preprocessor = ELMoPreprocessor(use_character_inputs=False,
                                    vocabulary=words)
    expected = batcher.batch_sentences([s.split() for s in sentences])
    assert preprocessor.ids_width is None
    np.testing.assert_array_equal(preprocessor(sentences), expected)


def test_manylangs_ids_equal_manylangs_batcher(manylangs_converted,
                                               manylangs_fixtures):
    options = BiLMOptions.from_json(manylangs_converted["options_file"])
    char_dic, word_dic = read_dictionaries(options.manylangs.char_dic,
                                           options.manylangs.word_dic)
    preprocessor = ELMoPreprocessor.from_options(
        options, char_dic=char_dic, word_dic=word_dic)
    with open(manylangs_fixtures / "sentences.json", encoding="utf-8") as f:
        sentences = [" ".join(s) for s in json.load(f)] + EXTRA
    expected = batcher_for_options(options).batch_sentences(
        [s.split() for s in sentences])
    np.testing.assert_array_equal(preprocessor(sentences), expected)


def test_from_preset_of_a_model_folder(model_dir, monkeypatch):
    from bilm_keras.weights import bilm_tf_hdf5

    def no_weights(*args, **kwargs):
        raise AssertionError("the preprocessor read the weights")
    monkeypatch.setattr(bilm_tf_hdf5, "load_bilm_tf_hdf5", no_weights)
    preprocessor = ELMoPreprocessor.from_preset(model_dir)
    np.testing.assert_array_equal(
        preprocessor(["The cat ."]),
        Batcher(None, 50).batch_sentences([["The", "cat", "."]]))


@pytest.mark.slow
def test_in_tf_data_and_config_round_trip(model_dir):
    preprocessor = ELMoPreprocessor(max_characters_per_token=50)
    again = ELMoPreprocessor.from_config(
        json.loads(json.dumps(preprocessor.get_config())))
    data = tf.data.Dataset.from_tensor_slices(
        ["a b c", "d"]).batch(2).map(again)
    ids = next(iter(data))
    assert isinstance(ids, tf.Tensor)
    np.testing.assert_array_equal(
        ids, Batcher(None, 50).batch_sentences([["a", "b", "c"], ["d"]]))


def test_bad_inputs():
    preprocessor = ELMoPreprocessor(max_characters_per_token=50,
                                    name="prep")
    with pytest.raises(ValueError, match="prep: inputs: expected strings, "
                                         "found int64"):
        preprocessor(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"prep: inputs: expected tf.string"
                                         r".*found string of shape \(1, 1, 1"):
        preprocessor(tf.constant([[["a"]]]))
    with pytest.raises(ValueError, match="vocabulary: a word-input model"):
        ELMoPreprocessor(use_character_inputs=False, name="words")(["a"])


#: run under KERAS_BACKEND=jax or torch: the ids in tf.data (TF tensors)
#: and eagerly on NumPy (the backend's tensors), for the three kinds
_BACKEND_CHECK = """
import json, sys
import numpy as np
import keras, tensorflow as tf
from bilm_keras import ELMoPreprocessor
from bilm_keras.data.manylangs_dictionaries import read_dictionaries
sentences, vocabulary, char_dic, word_dic = json.loads(sys.stdin.read())
out = {"backend": keras.backend.backend()}
for kind, prep in (
        ("chars", ELMoPreprocessor(max_characters_per_token=50)),
        ("words", ELMoPreprocessor(use_character_inputs=False,
                                   vocabulary=vocabulary)),
        ("manylangs", ELMoPreprocessor(max_characters_per_token=20,
                                       char_dic=char_dic, word_dic=word_dic))):
    data = tf.data.Dataset.from_tensor_slices(sentences).batch(8).map(prep)
    batch = next(iter(data))
    eager = prep(np.array(sentences))
    out[kind] = {"tf_data": batch.numpy().tolist(),
                 "tf_data_type": type(batch).__module__.split(".")[0],
                 "eager": keras.ops.convert_to_numpy(eager).tolist(),
                 "eager_type": type(eager).__module__.split(".")[0]}
print(json.dumps(out))
"""


@pytest.mark.slow  # a fresh interpreter per backend: 30-70 s on the EPYC
@pytest.mark.nightly
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_other_backends_give_the_batchers_ids(backend, model_dir,
                                              manylangs_fixtures):
    require_installed(backend, "test")
    model = manylangs_fixtures / "tiny.model"
    char_dic, word_dic = read_dictionaries(model / "char.dic",
                                           model / "word.dic")
    vocab_file = str(model_dir.parent / "data" / "vocab_test.txt")
    batcher = TokenBatcher(vocab_file)
    vocabulary = [batcher._lm_vocab.id_to_word(i)
                  for i in range(batcher._lm_vocab.size)]
    sentences = ["The cat sat .", "北京 欢迎 你", "", "<S> x"]
    env = dict(os.environ, KERAS_BACKEND=backend,
               PYTHONPATH=os.pathsep.join(
                   [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", _BACKEND_CHECK], env=env, cwd=REPO_ROOT,
        input=json.dumps([sentences, vocabulary, char_dic, word_dic]),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["backend"] == backend
    tokens = [s.split() for s in sentences]
    expected = {
        "chars": Batcher(None, 50).batch_sentences(tokens),
        "words": batcher.batch_sentences(tokens),
        "manylangs": _manylangs_ids(char_dic, word_dic, tokens),
    }
    native = {"jax": "jaxlib", "torch": "torch"}[backend]
    for kind, ids in expected.items():
        np.testing.assert_array_equal(out[kind]["tf_data"], ids)
        np.testing.assert_array_equal(out[kind]["eager"], ids)
        assert out[kind]["tf_data_type"] == "tensorflow"
        assert out[kind]["eager_type"] in (native, "jax")


def _manylangs_ids(char_dic, word_dic, tokens):
    from bilm_keras.data.manylangs_batcher import ManyLangsBatcher

    return ManyLangsBatcher(char_dic, word_dic, 20).batch_sentences(tokens)


def test_in_a_functional_model():
    preprocessor = ELMoPreprocessor(max_characters_per_token=50)
    text = keras.Input(shape=(), dtype="string")
    ids = preprocessor(text)
    assert (tuple(ids.shape), ids.dtype) == ((None, None, 50), "int32")
    tokens = keras.Input(shape=(7,), dtype="string")
    assert tuple(preprocessor(tokens).shape) == (None, 9, 50)
    model = keras.Model(text, ids)
    np.testing.assert_array_equal(
        model(tf.constant(["a b"])),
        Batcher(None, 50).batch_sentences([["a", "b"]]))


def test_assets_round_trip(model_dir, tmp_path):
    vocab_file = str(model_dir.parent / "data" / "vocab_test.txt")
    batcher = TokenBatcher(vocab_file)
    words = [batcher._lm_vocab.id_to_word(i)
             for i in range(batcher._lm_vocab.size)]
    preprocessor = ELMoPreprocessor(use_character_inputs=False,
                                    vocabulary=words)
    preprocessor.save_assets(tmp_path / "assets" / "tokenizer")
    assert os.listdir(tmp_path / "assets" / "tokenizer") == ["vocab.txt"]
    config = preprocessor.get_config()
    config["vocabulary"] = None
    again = ELMoPreprocessor.from_config(config)
    again.load_preset_assets(tmp_path)
    assert again.vocabulary == words
    np.testing.assert_array_equal(again(["The cat ."]),
                                  batcher.batch_sentences([["The", "cat",
                                                            "."]]))
