"""TF1 Hub modules, folder or tarball, as models: ``convert_tfhub`` (a
tarball opened by ``extracted_model``, as ``convert-tfhub`` opens it) and
``from_pretrained(MODULE)`` give bilm-tf's reference embeddings
(tests/fixtures/bilm-tf, 1e-6) and, as ``output="mix"`` with no mix of
its own, the module's own ``elmo`` output (tests/fixtures/tfhub_modules,
computed by the module under tensorflow-hub 0.15)."""

import pathlib
import tarfile

import numpy as np
import pytest

from bilm_keras import BidirectionalLanguageModel
from bilm_keras.pretrained import PretrainedModelError
from bilm_keras.pretrained.archives import extracted_model
from bilm_keras.weights.model_detection import TFHUB_TF1, find_model
from bilm_keras.weights.tfhub_conversion import convert_tfhub
from bilm_keras.weights.tfhub_module import TFHubModuleError
from helpers import hdf5_datasets, load_reference_embeddings

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
MODULES = FIXTURES / "tfhub_modules"
ATOL = 1e-6


@pytest.fixture(scope="module")
def first_batch():
    """``(sentences, bilm-tf's top layers)`` of the batch the modules'
    outputs were computed for: sentence 0 of each list."""
    sentences, expected = load_reference_embeddings(FIXTURES / "bilm-tf"
                                                    / "model")
    return ([lst[0] for lst in sentences], [lst[0] for lst in expected])


@pytest.fixture(scope="module")
def module_outputs():
    with np.load(MODULES / "reference.npz") as f:
        return dict(f)


def _tarball(folder, path) -> pathlib.Path:
    """``folder``'s files at the root of a ``.tar.gz``, as tfhub.dev and
    Kaggle serve a module."""
    with tarfile.open(path, "w:gz") as tar:
        for item in sorted(folder.rglob("*")):
            tar.add(item, arcname=str(item.relative_to(folder)),
                    recursive=False)
    return path


def _convert_tarball(tarball, outdir) -> dict:
    with extracted_model(tarball, family=TFHUB_TF1) as module:
        return convert_tfhub(module, outdir)


def test_a_module_folder_is_found_as_one(tmp_path):
    assert find_model(str(MODULES / "google")).family == TFHUB_TF1


def test_a_tarball_converts_as_its_folder(tmp_path):
    tarball = _tarball(MODULES / "deeppavlov", tmp_path / "dp.tar.gz")
    from_tar = _convert_tarball(tarball, tmp_path / "a")
    from_dir = convert_tfhub(MODULES / "deeppavlov", tmp_path / "b")
    a = hdf5_datasets(from_tar["weight_file"])
    b = hdf5_datasets(from_dir["weight_file"])
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    for name in ("options_file", "mix_file"):
        assert (pathlib.Path(from_tar[name]).read_text()
                == pathlib.Path(from_dir[name]).read_text())


def test_a_bad_tarball_names_itself_and_writes_nothing(tmp_path):
    module = tmp_path / "module"
    module.mkdir()
    for item in (MODULES / "google").iterdir():
        if item.is_file():
            (module / item.name).write_bytes(item.read_bytes())
    tarball = _tarball(module, tmp_path / "elmo.tar.gz")  # no variables/
    with pytest.raises(TFHubModuleError,
                       match=r"^\S*elmo.tar.gz: variables/variables.index: "
                             r"missing$"):
        _convert_tarball(tarball, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_from_pretrained_refuses_a_bad_module_in_one_line(tmp_path):
    module = tmp_path / "elmo"
    module.mkdir()
    (module / "saved_model.pb").write_bytes(b"")
    with pytest.raises(PretrainedModelError,
                       match=r"cannot convert the TF1 Hub module: .*found "
                             r"a SavedModel without tfhub_module.pb"):
        BidirectionalLanguageModel.from_pretrained(
            module, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "models").glob("*"))


def _check(bilm, name, first_batch, module_outputs, bilm_tf=True):
    sentences, expected = first_batch
    mix = bilm.embed_sentences(sentences, output="mix")
    layers = bilm.embed_sentences(sentences)
    for k, sentence in enumerate(sentences):
        n = len(sentence)
        for signature in ("default", "tokens"):
            own = f"{name}/{signature}/"
            np.testing.assert_allclose(
                mix[k], module_outputs[own + "elmo"][k, :n], rtol=0,
                atol=ATOL, err_msg=f"{own}elmo, sentence {k}")
            np.testing.assert_allclose(
                layers[k][2], module_outputs[own + "lstm_outputs2"][k, :n],
                rtol=0, atol=ATOL)
            np.testing.assert_allclose(
                layers[k][0][:, :16], module_outputs[own + "word_emb"][k, :n],
                rtol=0, atol=ATOL)
        if bilm_tf:
            np.testing.assert_allclose(layers[k][2], expected[k], rtol=0,
                                       atol=ATOL)


@pytest.mark.slow
def test_from_pretrained_of_a_module_gives_its_elmo(tmp_path, first_batch,
                                                    module_outputs):
    bilm = BidirectionalLanguageModel.from_pretrained(
        MODULES / "google", cache_dir=tmp_path / "cache")
    assert bilm.pretrained.format == TFHUB_TF1 and bilm.pretrained.cached
    _check(bilm, "google", first_batch, module_outputs)


@pytest.mark.slow  # a model per module
@pytest.mark.parametrize("name", ["deeppavlov", "google_tf12",
                                  "google_skip"])
def test_from_pretrained_of_each_module(name, tmp_path, first_batch,
                                        module_outputs):
    bilm = BidirectionalLanguageModel.from_pretrained(
        _tarball(MODULES / name, tmp_path / f"{name}.tar.gz"),
        cache_dir=tmp_path / "cache")
    # skip connections and other clips: not bilm-tf's fixture model
    _check(bilm, name, first_batch, module_outputs,
           bilm_tf=name != "google_skip")


@pytest.mark.slow
def test_a_mix_given_overrides_the_learned_one(tmp_path, first_batch):
    out = convert_tfhub(MODULES / "google", tmp_path / "out")
    bilm = BidirectionalLanguageModel.from_pretrained(out["outdir"])
    sentences, _ = first_batch
    got = bilm.embed_sentences(sentences[:1], output="mix",
                               mix_weights=[0, 0, 1])
    top = bilm.embed_sentences(sentences[:1], output="top")
    np.testing.assert_allclose(got[0], top[0], rtol=0, atol=ATOL)
