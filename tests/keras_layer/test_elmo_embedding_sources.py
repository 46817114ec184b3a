"""ELMoEmbedding from a training save_dir, ours or bilm-tf's (the same
layers as ``dump-weights`` and the dump loaded, 1e-6), and from a TF1 Hub
module, whose learned mix it starts from (the module's own ``elmo``,
tests/fixtures/tfhub_modules/reference.npz, 1e-6)."""

import json
import pathlib
import shutil
import tarfile

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import ELMoEmbedding
from bilm_keras.weights.tfhub_conversion import convert_tfhub
from bilm_keras.save_dirs.weight_dump import dump_weights
from helpers import load_reference_embeddings

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
MODULES = FIXTURES / "tfhub_modules"
ATOL = 1e-6
SENTENCES = ["The cat sat .", "Hi", "a longer sentence with 北京 in it ."]


def _padded(sentences):
    width = max(map(len, sentences))
    return tf.constant([s + [""] * (width - len(s)) for s in sentences])


def _same_as_its_dump(save_dir, tmp_path):
    from_save_dir = ELMoEmbedding.from_pretrained(save_dir, output="layers")
    dumped = dump_weights(str(save_dir), str(tmp_path / "dump"
                                              / "lm_weights.hdf5"))
    from_dump = ELMoEmbedding.from_pretrained(
        pathlib.Path(dumped["weight_file"]).parent, output="layers",
        cache_dir=tmp_path / "cache")
    assert from_save_dir.options == from_dump.options
    got = from_save_dir(tf.constant(SENTENCES)).numpy()
    expected = from_dump(tf.constant(SENTENCES)).numpy()
    assert got.shape == expected.shape and np.abs(expected).max() > 0.1
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    # a save_dir holds no learned mix: zeros and one
    mix = from_save_dir.scalar_mix
    np.testing.assert_array_equal(mix.scalar_weights.numpy(),
                                  np.zeros(from_save_dir.n_layers))
    np.testing.assert_array_equal(mix.gamma.numpy(), [1.0])


@pytest.mark.slow
def test_our_save_dir_gives_what_its_dump_gives(short_char_run, tmp_path):
    save_dir, _ = short_char_run
    _same_as_its_dump(save_dir, tmp_path)


@pytest.mark.slow  # trains a model
def test_a_word_input_save_dir_needs_and_reads_its_vocabulary(train_dir,
                                                              tmp_path):
    from bilm_keras.training import TrainingRun, train
    from helpers import fixture_options

    save_dir = tmp_path / "checkpoints"
    vocab_file = str(train_dir / "vocab.txt")
    train(fixture_options(use_chars=False, n_epochs=1), TrainingRun(
        train_prefix=str(train_dir / "data.txt"), vocab_file=vocab_file,
        save_dir=str(save_dir), seed=3, log_every=1000))
    # the one message for a word-input model without its vocabulary
    # (keras_layer/elmo_preprocessor.py's model_assets)
    with pytest.raises(ValueError, match=r"^vocab_file: .*checkpoints takes "
                                         r"words and ships no vocabulary "
                                         r"\(pass vocab_file=\)"):
        ELMoEmbedding.from_pretrained(save_dir)
    layer = ELMoEmbedding.from_pretrained(save_dir, output="layers",
                                          vocab_file=vocab_file)
    dumped = dump_weights(str(save_dir), str(tmp_path / "dump"
                                              / "lm_weights.hdf5"))
    from_dump = ELMoEmbedding.from_pretrained(
        pathlib.Path(dumped["weight_file"]).parent, output="layers",
        vocab_file=vocab_file, cache_dir=tmp_path / "cache")
    words = tf.constant(["the cat sat", "hi there"])  # some not in vocab
    got, expected = layer(words).numpy(), from_dump(words).numpy()
    assert np.abs(expected).max() > 0.01
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.slow
def test_the_facade_reads_our_save_dir_as_its_dump(short_char_run,
                                                   tmp_path):
    # the save_dir is read below the facade (bilm_keras/save_dirs/):
    # from_pretrained(SAVE_DIR) equals dump-weights, then from_pretrained
    from bilm_keras import BidirectionalLanguageModel

    save_dir, _ = short_char_run
    bilm = BidirectionalLanguageModel.from_pretrained(
        save_dir, cache_dir=tmp_path / "cache")
    dumped = dump_weights(str(save_dir), str(tmp_path / "dump"
                                              / "lm_weights.hdf5"))
    from_dump = BidirectionalLanguageModel.from_pretrained(
        pathlib.Path(dumped["weight_file"]).parent,
        cache_dir=tmp_path / "cache")
    sentences = [s.split() for s in SENTENCES]
    got = bilm.embed_sentences(sentences)
    expected = from_dump.embed_sentences(sentences)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and np.abs(e).max() > 0.1
        np.testing.assert_allclose(g, e, rtol=0, atol=ATOL)
    assert not (tmp_path / "cache").exists()  # nothing cached for a run
    with pytest.raises(ValueError, match=r"checkpoints: a training run is "
                       r"read for character input at float32, found "
                       r"precision='bfloat16'"):
        BidirectionalLanguageModel.from_pretrained(save_dir,
                                                   precision="bfloat16")


@pytest.mark.slow  # two models of bilm-tf's fixture size
def test_a_bilm_tf_save_dir_gives_what_its_dump_gives(tmp_path):
    _same_as_its_dump(FIXTURES / "bilm_tf_run" / "save_dir", tmp_path)


@pytest.mark.slow
def test_a_save_dir_with_a_weights_file_is_a_model_folder(tmp_path):
    # dump-weights into the save_dir itself: the HDF5 is the model, the
    # checkpoints beside it are not read (a cut checkpoint shows it)
    save_dir = tmp_path / "save_dir"
    shutil.copytree(FIXTURES / "bilm_tf_run" / "save_dir", save_dir)
    dump_weights(str(save_dir), str(save_dir / "lm_weights.hdf5"))
    for data in save_dir.glob("model.ckpt-*.data-*"):
        data.write_bytes(b"")
    layer = ELMoEmbedding.from_pretrained(save_dir, output="layers",
                                          cache_dir=tmp_path / "cache")
    assert layer(tf.constant(SENTENCES)).shape[1] == layer.n_layers


@pytest.fixture(scope="module")
def first_batch():
    """The sentences the modules' outputs were computed for: sentence 0
    of each list of bilm-tf's fixture."""
    sentences, _ = load_reference_embeddings(FIXTURES / "bilm-tf" / "model")
    return [lst[0] for lst in sentences]


@pytest.fixture(scope="module")
def module_outputs():
    with np.load(MODULES / "reference.npz") as f:
        return dict(f)


def _check_elmo(layer, name, first_batch, module_outputs):
    by_input = {
        "default": layer(tf.constant([" ".join(s) for s in first_batch])),
        "tokens": layer(_padded(first_batch)),
    }
    for signature, got in by_input.items():
        expected = module_outputs[f"{name}/{signature}/elmo"]
        for k, sentence in enumerate(first_batch):
            n = len(sentence)
            np.testing.assert_allclose(
                got[k, :n].numpy(), expected[k, :n], rtol=0, atol=ATOL,
                err_msg=f"{name}/{signature}/elmo, sentence {k}")


@pytest.mark.slow
def test_a_tf1_hub_module_starts_from_its_learned_mix(
        tmp_path, first_batch, module_outputs):
    layer = ELMoEmbedding.from_pretrained(MODULES / "google",
                                          cache_dir=tmp_path / "cache")
    _check_elmo(layer, "google", first_batch, module_outputs)
    # and trains from there: the mix's weights, not constants
    assert [w.name for w in layer.trainable_weights] == ["scalar_weights",
                                                         "gamma"]


@pytest.mark.slow  # a model per module
def test_a_module_tarball_and_a_converted_folder(
        tmp_path, first_batch, module_outputs):
    tarball = tmp_path / "deeppavlov.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for item in sorted((MODULES / "deeppavlov").rglob("*")):
            tar.add(item, recursive=False, arcname=str(
                item.relative_to(MODULES / "deeppavlov")))
    layer = ELMoEmbedding.from_pretrained(tarball,
                                          cache_dir=tmp_path / "cache")
    _check_elmo(layer, "deeppavlov", first_batch, module_outputs)
    converted = convert_tfhub(MODULES / "google_skip", tmp_path / "skip")
    layer = ELMoEmbedding.from_pretrained(
        pathlib.Path(converted["options_file"]).parent,
        cache_dir=tmp_path / "cache")
    _check_elmo(layer, "google_skip", first_batch, module_outputs)


def test_a_model_without_mix_json_starts_at_zeros_and_one(model_dir):
    layer = ELMoEmbedding.from_pretrained(model_dir)
    np.testing.assert_array_equal(layer.scalar_mix.scalar_weights.numpy(),
                                  np.zeros(3))
    np.testing.assert_array_equal(layer.scalar_mix.gamma.numpy(), [1.0])


def test_a_mix_json_of_another_depth_names_itself(tmp_path):
    converted = convert_tfhub(MODULES / "google", tmp_path / "google")
    mix_file = pathlib.Path(converted["mix_file"])
    mix_file.write_text(json.dumps({"mix_logits": [0.1, 0.2],
                                    "gamma": 1.0}))
    with pytest.raises(ValueError,
                       match=r"mix.json: mix_logits: expected 3 values "
                             r"\(one per layer\), found 2$"):
        ELMoEmbedding.from_pretrained(mix_file.parent,
                                      cache_dir=tmp_path / "cache")
