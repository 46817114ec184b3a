"""The archive layouts of the registry's bilm-tf-style families, each
served by a local mirror at its real URL's path and built from the
fixture models: NLPL's zips (``model.hdf5``, ``n_characters`` 261, a
``meta.json``), EMBEDDIA's tarballs (weights of another name, no
vocabulary), DeepPavlov's LM-ready archives (a TF1 checkpoint, no HDF5),
the cross-lingual models' two files, and a tarball that ships its
checkpoint beside the weights (t-systems' layout). Each quirk is said in
one logged line; the weights are bilm-tf's bit for bit."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import json
import logging
import pathlib

import numpy as np
import pytest
from model_server import (  # noqa: F401 (fixtures)
    ModelServer,
    cache_contents,
    cache_dir,
    folder_files,
    tar_bytes,
    zip_bytes,
)

from helpers import hdf5_datasets

from bilm_keras.pretrained import PretrainedModelError, resolve_model
from bilm_keras.weights.alignment import read_alignment_matrix

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
RUN = FIXTURES / "bilm_tf_run"
LM_READY = FIXTURES / "deeppavlov_lm" / "elmo-lm-ready4fine-tuning"
NLPL_210 = "/repository/20/210.zip"
NLPL_217 = "/repository/20/217.zip"
#: the NLPL ELMo zips registered from the sources that link them (a
#: RusVectores model and the SemEval-2020 system's four), by ID
NLPL_LINKED = {"nlpl-199": "/repository/20/199.zip",
               "nlpl-201": "/repository/20/201.zip",
               "nlpl-202": "/repository/20/202.zip",
               "nlpl-203": "/repository/20/203.zip",
               "nlpl-209": "/repository/20/209.zip"}
EMBEDDIA_SL = ("/repository/xmlui/bitstream/handle/11356/1277/"
               "slovenian-elmo.tar.gz")
RU_NEWS_LM = "/deeppavlov_data/elmo-lm-ready4fine-tuning-ru-news.tar.gz"
XLING_OPTIONS = "/s/ypjuzlf7kj957g3/options262.json"
XLING_EN = "/s/1h62kc1qdcuyy2u/en_weights.hdf5"
XLING_EN_ALIGNMENT = "/s/nufj4pxxgv5838r/en_best_mapping.pth"
XLING_ES = "/s/ygfjm7zmufl5gu2/es_weights.hdf5"
XLING_ES_ALIGNMENT = "/s/6kqot8ssy66d5u0/es_best_mapping.pth"
XLING = FIXTURES / "xling"
#: the Kaggle handle's path (the query ?tf-hub-format=compressed asks for
#: the tarball; the mirror serves by path)
ELMO_3 = "/models/google/elmo/TensorFlow1/elmo/3"
RU_NEWS = "/deeppavlov_data/elmo_ru-news_wmt11-16_1.5M_steps.tar.gz"
MODULES = FIXTURES / "tfhub_modules"
GERMAN_PARTS = [("/t-systems-on-site-services-gmbh/german-elmo-model/releases/"
                 f"download/files_1/bilm-output-result.tgz.part-{k:02d}")
                for k in range(4)]


def _tsystems_files() -> dict:
    """t-systems' layout: weights.hdf5, options.json, vocab-train.txt and
    the TF1 checkpoint bilm-tf's training left."""
    return {"bilm-output-result/" + name: data for name, data in {
        "weights.hdf5": (RUN / "lm_weights.hdf5").read_bytes(),
        "options.json": (RUN / "save_dir" / "options.json").read_bytes(),
        "vocab-train.txt": (RUN / "vocab.txt").read_bytes(),
        **{p.name: p.read_bytes()
           for p in (RUN / "save_dir").iterdir()
           if p.name.startswith(("model.ckpt", "checkpoint"))},
    }.items()}


def _module_tarball(folder: pathlib.Path) -> bytes:
    """A module's files at the root of a ``.tar.gz``, as Kaggle and
    DeepPavlov serve one."""
    files = {str(p.relative_to(folder)): p.read_bytes()
             for p in sorted(folder.rglob("*")) if p.is_file()}
    return tar_bytes(files, mode="w:gz")


def _lm_ready_files(prefix: str) -> dict:
    files = folder_files(LM_READY, prefix)
    files.update(folder_files(LM_READY / "saves", prefix + "saves/"))
    return files


def _split(data: bytes) -> dict:
    """The German tarball in four parts at their release paths."""
    step = -(-len(data) // 4)
    return {path: data[k * step:(k + 1) * step]
            for k, path in enumerate(GERMAN_PARTS)}


@pytest.fixture
def served(bilm_fixtures, cache_dir, monkeypatch):
    model = bilm_fixtures / "model"
    options = json.loads((model / "options.json").read_text())
    options["char_cnn"]["n_characters"] = 261  # as NLPL's zips give it
    weights = (model / "lm_weights.hdf5").read_bytes()
    routes = {
        NLPL_210: zip_bytes({
            "options.json": json.dumps(options).encode(),
            "model.hdf5": weights,
            "vocab.txt": (model / "vocab_test.txt").read_bytes(),
            "meta.json": b'{"id": 210, "corpus": []}',
            "README.txt": b"NLPL repository entry 210\n"}),
        NLPL_217: zip_bytes({
            "options.json": (model / "options.json").read_bytes(),
            "model.hdf5": weights}),
        **{path: zip_bytes({
            "options.json": json.dumps(options).encode(),
            "model.hdf5": weights,
            "meta.json": json.dumps({"id": int(name[5:])}).encode(),
            "README.txt": f"NLPL repository entry {name[5:]}\n".encode()})
           for name, path in NLPL_LINKED.items()},
        EMBEDDIA_SL: tar_bytes({
            "slovenian/options.json": (model / "options.json").read_bytes(),
            "slovenian/slovenian-elmo-weights.hdf5": weights},
            mode="w:gz"),
        RU_NEWS_LM: tar_bytes(
            _lm_ready_files("elmo-lm-ready4fine-tuning-ru-news/"),
            mode="w:gz"),
        XLING_OPTIONS: (model / "options.json").read_bytes(),
        XLING_EN: weights,
        XLING_EN_ALIGNMENT: (XLING / "best_mapping.pth").read_bytes(),
        XLING_ES: weights,
        # a matrix of another model's size
        XLING_ES_ALIGNMENT: (XLING / "small.pth").read_bytes(),
        **_split(tar_bytes(_tsystems_files(), mode="w:gz")),
        ELMO_3: _module_tarball(MODULES / "google"),
        RU_NEWS: _module_tarball(MODULES / "deeppavlov"),
    }
    server = ModelServer(routes)
    monkeypatch.setenv("BILM_KERAS_MODEL_MIRROR", server.url)
    yield server
    server.stop()


def _lines(caplog, name):
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith(name + ": ")]


def test_an_nlpl_zip(served, cache_dir, bilm_fixtures, caplog):
    with caplog.at_level(logging.INFO):
        model = resolve_model("nlpl-210")
    assert model.format == "bilm-tf"
    assert model.directory == str(cache_dir / "models" / "nlpl-210")
    assert _lines(caplog, "nlpl-210") == [
        "nlpl-210: model.hdf5 is the weights, saved as lm_weights.hdf5",
        "nlpl-210: options give n_characters 261 (as trained); set to "
        "262, bilm-tf's value for prediction",
        "nlpl-210: meta.json is the publisher's metadata, kept beside the "
        "model and not read"]
    options = json.loads(pathlib.Path(model.options_file).read_text())
    assert options["char_cnn"]["n_characters"] == 262
    assert pathlib.Path(model.weight_file).read_bytes() == (
        bilm_fixtures / "model" / "lm_weights.hdf5").read_bytes()
    assert pathlib.Path(model.vocab_file).name == "vocab.txt"
    assert served.requests[NLPL_210] == 1


def test_a_readable_alias(served, cache_dir):
    model = resolve_model("norelmo-30")
    assert model.name == "nlpl-217"
    assert model.directory == str(cache_dir / "models" / "nlpl-217")
    # the next call by either name reads the cache
    assert resolve_model("nlpl-217").directory == model.directory
    assert served.requests[NLPL_217] == 1
    with pytest.raises(PretrainedModelError,
                       match=r"'norelmo-31': unknown model name \(did you "
                             r"mean norelmo-30"):
        resolve_model("norelmo-31")


@pytest.mark.slow
@pytest.mark.parametrize("name,alias", [
    ("nlpl-199", "taiga-lemmas-elmo-2048-2019"),
    ("nlpl-201", "semeval2020-elmo-de"),
    ("nlpl-202", "semeval2020-elmo-sv"),
    ("nlpl-203", "semeval2020-elmo-la"),
    ("nlpl-209", "semeval2020-elmo-en"),
])
def test_the_linked_nlpl_zips(name, alias, served, cache_dir, bilm_fixtures,
                              caplog):
    with caplog.at_level(logging.INFO):
        model = resolve_model(alias)
    assert model.name == name and model.format == "bilm-tf"
    assert model.directory == str(cache_dir / "models" / name)
    assert served.requests[NLPL_LINKED[name]] == 1
    assert _lines(caplog, name) == [
        f"{name}: model.hdf5 is the weights, saved as lm_weights.hdf5",
        f"{name}: options give n_characters 261 (as trained); set to 262, "
        "bilm-tf's value for prediction",
        f"{name}: meta.json is the publisher's metadata, kept beside the "
        "model and not read",
        f"{name}: no vocabulary in the archive (character input needs none)"]
    options = json.loads(pathlib.Path(model.options_file).read_text())
    assert options["char_cnn"]["n_characters"] == 262
    assert pathlib.Path(model.weight_file).read_bytes() == (
        bilm_fixtures / "model" / "lm_weights.hdf5").read_bytes()
    assert model.vocab_file is None
    # the ID reads the same cache entry, with no second download
    assert resolve_model(name).directory == model.directory
    assert served.requests[NLPL_LINKED[name]] == 1


def test_an_embeddia_tarball(served, caplog):
    with caplog.at_level(logging.INFO):
        model = resolve_model("embeddia-sl")
    assert model.vocab_file is None
    assert _lines(caplog, "embeddia-sl") == [
        "embeddia-sl: slovenian-elmo-weights.hdf5 is the weights, saved as "
        "lm_weights.hdf5",
        "embeddia-sl: no vocabulary in the archive (character input needs "
        "none)"]


def test_the_cross_lingual_files(served, bilm_fixtures):
    model = resolve_model("xling-en")
    assert pathlib.Path(model.weight_file).read_bytes() == (
        bilm_fixtures / "model" / "lm_weights.hdf5").read_bytes()
    assert served.requests[XLING_OPTIONS] == served.requests[XLING_EN] == 1
    # the published alignment matrix, beside the weights, read as numpy
    # saved it
    assert served.requests[XLING_EN_ALIGNMENT] == 1
    with np.load(XLING / "matrices.npz") as f:
        want = f["best_mapping"]
    np.testing.assert_array_equal(
        read_alignment_matrix(pathlib.Path(model.directory)
                              / "alignment.pth", 32), want)


@pytest.mark.slow
def test_the_cross_lingual_alignment_through_the_facade(served):
    from bilm_keras import BidirectionalLanguageModel

    plain = BidirectionalLanguageModel.from_pretrained("xling-en")
    aligned = BidirectionalLanguageModel.from_pretrained(
        "xling-en", alignment="published")
    sentences = [["The", "cat", "sat", "."]]
    with np.load(XLING / "matrices.npz") as f:
        w = f["best_mapping"].astype(np.float64)
    got = aligned.embed_sentences(sentences)[0]
    want = plain.embed_sentences(sentences)[0].astype(np.float64) @ w.T
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_a_published_alignment_of_the_wrong_size_caches_nothing(
        served, cache_dir):
    with pytest.raises(PretrainedModelError) as e:
        resolve_model("xling-es")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("xling-es: alignment ")
    assert XLING_ES_ALIGNMENT in message and "(32, 32)" in message
    assert cache_contents(cache_dir)["models"] == []


def test_a_deeppavlov_lm_ready_archive(served, caplog):
    from bilm_keras.weights.model_detection import locate_checkpoint

    with caplog.at_level(logging.INFO):
        model = resolve_model("deeppavlov-ru-news-lm")
    assert model.format == "tf1-checkpoint"
    # no line names the temporary folder it was read in
    assert not [r for r in caplog.records if "/tmp/" in r.getMessage()]
    assert _lines(caplog, "deeppavlov-ru-news-lm") == [
        "deeppavlov-ru-news-lm: the weights are the dump of its TF1 "
        "checkpoint saves/model, saved as lm_weights.hdf5 beside it",
        "deeppavlov-ru-news-lm: options give n_characters 261 (as "
        "trained); set to 262, bilm-tf's value for prediction"]
    # bilm-tf's dump of the same weights, bit for bit
    ours = hdf5_datasets(model.weight_file)
    theirs = hdf5_datasets(RUN / "lm_weights.hdf5")
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert np.array_equal(ours[name], value), name
    # the folder stays a save_dir: train --init_checkpoint takes it
    found = locate_checkpoint(model.directory)
    assert found.path == str(pathlib.Path(model.directory) / "saves"
                             / "model")
    assert pathlib.Path(model.vocab_file).name == "vocab.txt"


@pytest.mark.slow  # builds and runs a model (~4 s)
def test_the_nlpl_model_embeds_as_bilm_tfs(served, fixture_bilm):
    from bilm_keras import BidirectionalLanguageModel

    bilm = BidirectionalLanguageModel.from_pretrained("nlpl-210")
    sentences = [["the", "number", "of", "words", "."], ["neural"]]
    for got, want in zip(bilm.embed_sentences(sentences),
                         fixture_bilm.embed_sentences(sentences)):
        np.testing.assert_array_equal(got, want)


def test_a_checkpoint_beside_the_weights(served, caplog):
    from bilm_keras.weights.model_detection import locate_checkpoint

    with caplog.at_level(logging.INFO):
        model = resolve_model("german-tsystems")
    assert [served.requests[p] for p in GERMAN_PARTS] == [1, 1, 1, 1]
    assert _lines(caplog, "german-tsystems") == [
        "german-tsystems: joined the 4 parts of its archive, in order",
        "german-tsystems: weights.hdf5 is the weights, saved as "
        "lm_weights.hdf5",
        "german-tsystems: options give n_characters 261 (as trained); "
        "set to 262, bilm-tf's value for prediction",
        "german-tsystems: the TF1 checkpoint model.ckpt-40 beside the "
        "weights is kept in the model's folder, for train "
        "--init_checkpoint"]
    assert pathlib.Path(model.weight_file).read_bytes() == (
        RUN / "lm_weights.hdf5").read_bytes()
    assert pathlib.Path(model.vocab_file).name == "vocab-train.txt"
    # the folder is a save_dir: train --init_checkpoint takes it
    found = locate_checkpoint(model.directory)
    assert found.path == str(pathlib.Path(model.directory)
                             / "model.ckpt-40")
    assert found.global_step == 40


def test_an_lm_ready_archive_without_its_data(tmp_path, cache_dir):
    files = _lm_ready_files("elmo-lm-ready4fine-tuning-ru-news/")
    del files["elmo-lm-ready4fine-tuning-ru-news/saves/"
              "model.data-00000-of-00001"]
    archive = tmp_path / "lm.tar.gz"
    archive.write_bytes(tar_bytes(files, mode="w:gz"))
    with pytest.raises(PretrainedModelError) as info:
        resolve_model(str(archive))
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert ("model.data-00000-of-00001: missing (the checkpoint's values; "
            "model.index is there without them)") in message, message
    assert cache_contents(cache_dir)["models"] == []
    assert cache_contents(cache_dir)["tmp"] == []


@pytest.mark.slow
@pytest.mark.parametrize("name,path,mix", [
    ("tfhub-elmo-3", ELMO_3, "Google"),
    ("deeppavlov-ru-news", RU_NEWS, "DeepPavlov"),
])
def test_a_tf1_hub_module_by_name(name, path, mix, served, bilm_fixtures):
    model = resolve_model(name)
    assert model.format == "tfhub-tf1"
    assert served.requests[path] == 1
    # the module holds bilm-tf's fixture model: its weights come back
    ours = hdf5_datasets(model.weight_file)
    theirs = hdf5_datasets(bilm_fixtures / "model" / "lm_weights.hdf5")
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
    assert (pathlib.Path(model.directory) / "mix.json").is_file(), mix


@pytest.mark.slow  # one training step (~5 s)
def test_train_from_the_cached_german_checkpoint(served, tmp_path, capsys):
    from bilm_keras import cli

    model = resolve_model("german-tsystems")
    result = cli.run(["train", "--save_dir", str(tmp_path / "adapted"),
                      "--init_checkpoint", model.directory,
                      "--init_vocab_file", model.vocab_file,
                      "--vocab_file", model.vocab_file,
                      "--train_prefix", str(RUN / "heldout.txt"),
                      "--max_steps", "1", "--seed", "0"])
    assert result["step"] == 1
    assert (f"softmax: kept whole from "
            f"{pathlib.Path(model.directory) / 'model.ckpt-40'}") in (
        capsys.readouterr().out)
