"""The registry of published models: every published model, with its
URLs exactly as the publishers give them, and the mirror rewrite."""

import re
import urllib.parse

import pytest

from bilm_keras.pretrained import (
    PretrainedModelError,
    check_before_download,
    registered_model,
    registered_models,
)
from bilm_keras.pretrained.registry import _check_row, mirrored_url

ALLEN = "https://allennlp.s3.amazonaws.com/models/elmo/"

#: AllenNLP's models and their two files, as allennlp.org lists them
ALLENNLP = {
    "elmo-small": (
        ("2x1024_128_2048cnn_1xhighway/"
         "elmo_2x1024_128_2048cnn_1xhighway_options.json"),
        ("2x1024_128_2048cnn_1xhighway/"
         "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5")),
    "elmo-medium": (
        ("2x2048_256_2048cnn_1xhighway/"
         "elmo_2x2048_256_2048cnn_1xhighway_options.json"),
        ("2x2048_256_2048cnn_1xhighway/"
         "elmo_2x2048_256_2048cnn_1xhighway_weights.hdf5")),
    "elmo-original": (
        ("2x4096_512_2048cnn_2xhighway/"
         "elmo_2x4096_512_2048cnn_2xhighway_options.json"),
        ("2x4096_512_2048cnn_2xhighway/"
         "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5")),
    "elmo-original-5.5b": (
        ("2x4096_512_2048cnn_2xhighway_5.5B/"
         "elmo_2x4096_512_2048cnn_2xhighway_5.5B_options.json"),
        ("2x4096_512_2048cnn_2xhighway_5.5B/"
         "elmo_2x4096_512_2048cnn_2xhighway_5.5B_weights.hdf5")),
    "elmo-pubmed": (
        "contributed/pubmed/elmo_2x4096_512_2048cnn_2xhighway_options.json",
        ("contributed/pubmed/"
         "elmo_2x4096_512_2048cnn_2xhighway_weights_PubMed_only.hdf5")),
    "elmo-pt": ("contributed/pt/elmo_pt_options.json",
                "contributed/pt/elmo_pt_weights.hdf5"),
}

NLPL = re.compile(r"^https://vectors\.nlpl\.eu/repository/11/(\d+)\.zip$")


def test_allennlp_models_have_the_published_urls():
    for name, (options, weights) in ALLENNLP.items():
        model = registered_model(name)
        assert model is not None, name
        assert model.format == "bilm-tf"
        assert model.options_url == ALLEN + options
        assert model.weight_url == ALLEN + weights
        assert model.archive_url is None
    assert registered_model("elmo-pt").language_code == "pt"
    assert registered_model("elmo-original").parameters_millions == 93.6


def test_the_44_manylangs_models_and_zhs():
    models = registered_models()
    manylangs = {name: m for name, m in models.items()
                 if name.startswith("manylangs-") and name != "manylangs-zhs"}
    assert len(manylangs) == 44
    numbers = {}
    for name, model in manylangs.items():
        assert model.format == "elmoformanylangs"
        match = NLPL.match(model.archive_url)
        assert match, model.archive_url
        numbers[name] = int(match.group(1))
        # manylangs-<ISO 639-1>, else ISO 639-3
        assert name == f"manylangs-{model.language_code}"
        assert re.fullmatch(r"[a-z]{2,3}", model.language_code)
    # upstream's table: 136 Arabic ... 179 Chinese, one number each
    assert sorted(numbers.values()) == list(range(136, 180))
    assert numbers["manylangs-ar"] == 136
    assert numbers["manylangs-ja"] == 160
    assert numbers["manylangs-ko"] == 161
    assert numbers["manylangs-zh"] == 179
    assert numbers["manylangs-grc"] == 153  # Ancient Greek: no 639-1 code
    assert numbers["manylangs-nl"] == 164 and numbers["manylangs-nb"] == 165
    assert "traditional" in models["manylangs-zh"].language
    zhs = models["manylangs-zhs"]
    assert zhs.archive_url == "http://39.96.43.154/zhs.model.tar.bz2"
    assert zhs.format == "elmoformanylangs" and zhs.language_code == "zh"
    assert "simplified" in zhs.language
    # + paddle-baike-zh, google/elmo's 3 modules, DeepPavlov's 3 modules
    # and 3 LM-ready archives, RusVectores' 4, NorELMo's 4 and the SemEval
    # 2020 system's 4 NLPL models, embeddia-sl, german-tsystems and the 7
    # cross-lingual models
    assert len(models) == 6 + 44 + 1 + 1 + 3 + 3 + 3 + 4 + 4 + 4 + 1 + 1 + 7


def test_every_row_is_complete():
    for name, model in registered_models().items():
        assert model.language and model.source and model.description, name
        assert model.license and model.citation, name
        for url in model.urls:
            parts = urllib.parse.urlsplit(url)
            assert parts.scheme in ("http", "https") and parts.netloc, url
        # a name is a cache folder's name too, never a URL/file/dir key's
        assert not re.match(r"^(url|file|dir)-", name)
    assert all("Che et al. 2018" in m.citation
               for n, m in registered_models().items()
               if n.startswith("manylangs-"))
    assert all("Peters et al. 2018" in m.citation
               for n, m in registered_models().items()
               if n.startswith("elmo-"))


def test_mirror_replaces_scheme_and_host_and_keeps_the_path():
    url = registered_model("manylangs-zh").archive_url
    assert mirrored_url(url, None) == url
    assert (mirrored_url(url, "http://127.0.0.1:8123")
            == "http://127.0.0.1:8123/repository/11/179.zip")
    assert (mirrored_url(ALLEN + "a/b.hdf5", "https://mirror.example.org/elmo/")
            == "https://mirror.example.org/elmo/models/elmo/a/b.hdf5")


@pytest.mark.parametrize("mirror", ["ftp://mirror.example.org",
                                    "mirror.example.org", "http://"])
def test_a_bad_mirror_names_the_variable(mirror):
    with pytest.raises(PretrainedModelError,
                       match="BILM_KERAS_MODEL_MIRROR=.*expected an http"):
        mirrored_url("https://vectors.nlpl.eu/repository/11/179.zip", mirror)


def test_the_bilm_tf_families_have_their_publishers_urls():
    models = registered_models()
    for version in (1, 2, 3):
        model = models[f"tfhub-elmo-{version}"]
        assert model.format == "tfhub-tf1"
        assert model.archive_url == (
            "https://www.kaggle.com/models/google/elmo/TensorFlow1/elmo/"
            f"{version}?tf-hub-format=compressed")
    assert models["deeppavlov-ru-wiki"].archive_url == (
        "https://files.deeppavlov.ai/deeppavlov_data/"
        "elmo_ru-wiki_600k_steps.tar.gz")
    assert models["deeppavlov-ru-twitter"].archive_url.endswith(
        "/elmo_ru-twitter_2013-01_2018-04_600k_steps.tar.gz")
    for name in ("ru-news", "ru-twitter", "ru-wiki"):
        model = models[f"deeppavlov-{name}-lm"]
        assert model.format == "tf1-checkpoint"
        assert model.archive_url == (
            "https://files.deeppavlov.ai/deeppavlov_data/"
            f"elmo-lm-ready4fine-tuning-{name}.tar.gz")
    for number in (210, 211, 217, 218):
        model = models[f"nlpl-{number}"]
        assert model.format == "bilm-tf-archive"
        assert model.archive_url == (
            f"https://vectors.nlpl.eu/repository/20/{number}.zip")
        assert "Kutuzov et al. 2021" in model.citation
    german = models["german-tsystems"]
    assert german.archive_url is None
    assert german.archive_parts == tuple(
        "https://github.com/t-systems-on-site-services-gmbh/"
        "german-elmo-model/releases/download/files_1/"
        f"bilm-output-result.tgz.part-{k:02d}" for k in range(4))
    assert models["embeddia-sl"].archive_url.endswith(
        "/11356/1277/slovenian-elmo.tar.gz")
    xling = {n: m for n, m in models.items() if n.startswith("xling-")}
    assert sorted(xling) == sorted(
        f"xling-{c}" for c in ("en", "es", "fr", "it", "pt", "sv", "de"))
    for name, model in xling.items():
        code = name.split("-")[1]
        assert model.language_code == code
        assert model.options_url == ("https://www.dropbox.com/s/"
                                     "ypjuzlf7kj957g3/options262.json?dl=1")
        assert model.weight_url.endswith(f"/{code}_weights.hdf5?dl=1")
        assert "Schuster et al. 2019" in model.citation
    assert models["nlpl-217"].aliases == ("norelmo-30",)
    assert models["nlpl-195"].archive_url == (
        "https://vectors.nlpl.eu/repository/11/195.zip")
    assert registered_model(
        "araneum-lemmas-elmo-2048-2020") is models["nlpl-212"]
    assert registered_model("norelmo-100") is models["nlpl-218"]
    # the IDs their sources give: a RusVectores model a README links, and
    # the ELMo models the UiO-UvA SemEval-2020 system's README lists
    nlpl = {name: model for name, model in models.items()
            if name.startswith("nlpl-")}
    assert sorted(nlpl) == [f"nlpl-{n}" for n in (
        195, 196, 199, 201, 202, 203, 209, 210, 211, 212, 217, 218)]
    for name, model in nlpl.items():
        assert model.format == "bilm-tf-archive"
        assert model.archive_url.startswith("https://vectors.nlpl.eu/"), name
        assert model.archive_url.endswith(f"/{name[5:]}.zip"), name
    assert models["nlpl-199"].archive_url == (
        "https://vectors.nlpl.eu/repository/20/199.zip")
    assert registered_model(
        "taiga-lemmas-elmo-2048-2019") is models["nlpl-199"]
    for number, code in ((201, "de"), (202, "sv"), (203, "la"), (209, "en")):
        model = models[f"nlpl-{number}"]
        assert model.language_code == code
        assert model.archive_url == (
            f"https://vectors.nlpl.eu/repository/20/{number}.zip")
        assert "Kutuzov and Giulianelli 2020" in model.citation
        assert registered_model(f"semeval2020-elmo-{code}") is model
    # every row that does not know a fact says so
    for name in ("nlpl-199", "nlpl-209", "nlpl-210", "embeddia-sl",
                 "xling-de", "deeppavlov-ru-wiki-lm"):
        assert "not known" in models[name].note, name


def test_which_rows_ship_a_vocabulary():
    ships = {name: model.ships_vocabulary
             for name, model in registered_models().items()}
    # as their publishers list the archives' files
    assert {name for name, value in ships.items() if value} == {
        "german-tsystems", "deeppavlov-ru-news-lm",
        "deeppavlov-ru-twitter-lm", "deeppavlov-ru-wiki-lm"}
    assert ships["elmo-small"] is ships["manylangs-zh"] is False
    assert ships["tfhub-elmo-3"] is ships["paddle-baike-zh"] is False
    assert ships["embeddia-sl"] is False
    assert ships["nlpl-210"] is None  # known once the zip is read


@pytest.mark.parametrize("spec,call,says", [
    ("elmo-small", dict(token_input=True),
     "elmo-small: no vocabulary: the model ships none, and token input "
     "needs one: pass it with --vocab_file"),
    ("paddle-baike-zh", {},
     "paddle-baike-zh: no vocabulary: the model ships none, and its word "
     "input needs one: pass it with --vocab_file (vocabulary_min5k.txt "),
    ("paddle-baike-zh", dict(vocab_given=True, char_cnn=True),
     "paddle-baike-zh: the model takes words: it has no char-CNN"),
])
def test_a_call_the_row_says_cannot_work_is_refused(spec, call, says):
    kwargs = dict(vocab_given=False, vocab_flag="--vocab_file") | call
    with pytest.raises(PretrainedModelError, match="^" + re.escape(says)):
        check_before_download(spec, **kwargs)


@pytest.mark.parametrize("spec,call", [
    ("german-tsystems", dict(token_input=True)),  # its vocab-train.txt
    ("nlpl-210", dict(token_input=True)),  # not known: its zip says
    ("elmo-small", dict(token_input=True, vocab_given=True)),
    ("elmo-small", dict(char_cnn=True, token_input=True, vocab_given=True)),
    ("manylangs-zh", {}),
    ("paddle-baike-zh", dict(vocab_given=True)),
    ("no/such/folder", dict(token_input=True, char_cnn=True)),
])
def test_a_call_that_may_work_passes(spec, call):
    kwargs = dict(vocab_given=False, vocab_flag="--vocab_file") | call
    check_before_download(spec, **kwargs)


def test_a_row_cannot_ship_what_its_format_holds_not():
    row = {**dict(vars(registered_model("elmo-small"))), "aliases": [],
           "ships_vocabulary": True}
    with pytest.raises(PretrainedModelError,
                       match=r"models\[3\] \(elmo-small\): field "
                             r"'ships_vocabulary': expected false or absent "
                             r"\(a bilm-tf model\), found true"):
        _check_row(row, 3, "registry.json")
