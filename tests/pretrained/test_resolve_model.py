"""resolve_model over real HTTP from a local server (never the real
network): by registry name and by URL the resolved files equal the local
ones (byte-equal bilm-tf files; a ManyLangs model equal to
convert_manylangs run locally), a second call and a stopped server are
served from the cache, and every bad input is one line with nothing left
in the cache."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments: pytest's way to share them without a second conftest.py)

import json
import re
import os
import pathlib

import numpy as np
import pytest
from model_server import (  # noqa: F401 (fixtures)
    BILM_TF_ZIP,
    ELMO_SMALL_OPTIONS,
    ELMO_SMALL_WEIGHTS,
    JA_ZIP,
    ZH_ZIP,
    ZHS_TAR,
    cache_contents,
    cache_dir,
    free_port_url,
    mirrored,
    model_server,
    served_files,
    zip_bytes,
)

from bilm_keras.pretrained import (
    PretrainedModelError,
    list_models,
    resolve_model,
)
from bilm_keras.pretrained.model_cache import MANIFEST
from bilm_keras.pretrained.registry import registered_models
from helpers import hdf5_datasets



def assert_same_conversion(resolved, local: dict, tiny_model):
    """``resolved`` holds what convert_manylangs wrote locally."""
    assert resolved.format == "elmoformanylangs"
    with open(resolved.options_file) as f, open(local["options_file"]) as g:
        assert json.load(f) == json.load(g)
    ours, theirs = (hdf5_datasets(resolved.weight_file),
                    hdf5_datasets(local["weight_file"]))
    assert sorted(ours) == sorted(theirs) and ours
    for name in theirs:
        assert ours[name].dtype == theirs[name].dtype, name
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    for dic in ("char.dic", "word.dic"):
        assert (pathlib.Path(resolved.directory, dic).read_bytes()
                == (tiny_model / dic).read_bytes())
    assert resolved.vocab_file is None


def assert_one_line(error):
    assert "\n" not in str(error.value)


# --- by name ------------------------------------------------------------------

def test_bilm_tf_model_by_name_is_byte_equal_and_cached(
        mirrored, cache_dir, bilm_fixtures):
    model = resolve_model("elmo-small")
    assert model.name == "elmo-small" and model.format == "bilm-tf"
    assert model.cached and model.spec == "elmo-small"
    assert model.directory == str(cache_dir / "models" / "elmo-small")
    fixture = bilm_fixtures / "model"
    assert (pathlib.Path(model.options_file).read_bytes()
            == (fixture / "options.json").read_bytes())
    assert (pathlib.Path(model.weight_file).read_bytes()
            == (fixture / "lm_weights.hdf5").read_bytes())
    assert model.vocab_file is None
    assert mirrored.requests[ELMO_SMALL_OPTIONS] == 1
    assert mirrored.requests[ELMO_SMALL_WEIGHTS] == 1
    manifest = json.loads((cache_dir / "models" / "elmo-small"
                           / MANIFEST).read_text())
    assert manifest["sources"] == [mirrored.url + ELMO_SMALL_OPTIONS,
                                   mirrored.url + ELMO_SMALL_WEIGHTS]
    # the second call: from the cache, no request
    assert resolve_model("elmo-small") == model
    assert sum(mirrored.requests.values()) == 2
    assert cache_contents(cache_dir) == {"models": ["elmo-small"],
                                         "tmp": []}


@pytest.mark.parametrize("name, path", [
    ("manylangs-zh", ZH_ZIP),    # zip, the model inside one folder
    ("manylangs-ja", JA_ZIP),    # zip, at the root, stale config_path
    ("manylangs-zhs", ZHS_TAR),  # .tar.bz2, inside one folder
])
def test_manylangs_model_by_name_is_converted_once(
        name, path, mirrored, cache_dir, manylangs_converted,
        manylangs_fixtures):
    model = resolve_model(name)
    assert model.name == name and model.cached
    assert model.directory == str(cache_dir / "models" / name)
    assert_same_conversion(model, manylangs_converted,
                           manylangs_fixtures / "tiny.model")
    assert mirrored.requests[path] == 1
    manifest = json.loads(pathlib.Path(model.directory, MANIFEST).read_text())
    assert resolve_model(name) == model  # cached: not converted again
    assert json.loads(pathlib.Path(model.directory, MANIFEST).read_text()) \
        == manifest
    assert mirrored.requests[path] == 1
    # the archive and the extracted files are gone
    assert cache_contents(cache_dir) == {"models": [name], "tmp": []}


# --- by URL -------------------------------------------------------------------

def test_manylangs_archive_by_url(model_server, cache_dir,
                                  manylangs_converted, manylangs_fixtures):
    url = model_server.url + ZH_ZIP
    model = resolve_model(url)
    assert model.name == "179" and model.spec == url
    assert os.path.basename(model.directory).startswith("url-")
    assert os.path.basename(model.directory).endswith("-179.zip")
    assert_same_conversion(model, manylangs_converted,
                           manylangs_fixtures / "tiny.model")


def test_bilm_tf_archive_by_url(model_server, cache_dir, bilm_fixtures):
    url = model_server.url + BILM_TF_ZIP
    model = resolve_model(url)
    fixture = bilm_fixtures / "model"
    assert model.format == "bilm-tf" and model.name == "999"
    # model.hdf5 under the cache's name, the vocabulary as it was named
    assert os.path.basename(model.weight_file) == "lm_weights.hdf5"
    assert (pathlib.Path(model.weight_file).read_bytes()
            == (fixture / "lm_weights.hdf5").read_bytes())
    assert (pathlib.Path(model.options_file).read_bytes()
            == (fixture / "options.json").read_bytes())
    assert model.vocab_file == os.path.join(model.directory, "vocab.txt")
    assert (pathlib.Path(model.vocab_file).read_bytes()
            == (fixture / "vocab_test.txt").read_bytes())


def test_a_stopped_server_is_not_needed_for_cached_models(
        mirrored, cache_dir):
    by_name = resolve_model("manylangs-zh")
    url = mirrored.url + BILM_TF_ZIP
    by_url = resolve_model(url)
    elmo = resolve_model("elmo-small")
    mirrored.stop()
    assert resolve_model("manylangs-zh") == by_name
    assert resolve_model(url) == by_url
    assert resolve_model("elmo-small") == elmo
    # and with the mirror gone, or one that could not be used
    assert resolve_model("elmo-small", mirror="") == elmo
    assert resolve_model("elmo-small", mirror="not a URL") == elmo
    with pytest.raises(PretrainedModelError, match="cannot connect"):
        resolve_model("manylangs-ja")  # never fetched: needs the server


# --- local specs --------------------------------------------------------------

def test_a_local_bilm_tf_directory_is_used_in_place(bilm_fixtures,
                                                    cache_dir):
    folder = bilm_fixtures / "model"  # lm_weights.hdf5 + 3 embedding files
    model = resolve_model(folder)
    assert not model.cached and model.format == "bilm-tf"
    assert model.directory == os.path.abspath(folder)
    assert model.weight_file == os.path.abspath(folder / "lm_weights.hdf5")
    assert model.options_file == os.path.abspath(folder / "options.json")
    assert model.vocab_file == os.path.abspath(folder / "vocab_test.txt")
    assert not cache_dir.exists()  # nothing cached, nothing written


def test_a_local_manylangs_directory_is_converted_once(
        manylangs_fixtures, cache_dir, manylangs_converted):
    tiny = manylangs_fixtures / "tiny.model"  # read-only: nothing written
    model = resolve_model(str(tiny))
    assert model.cached and model.name == "tiny.model"
    assert os.path.basename(model.directory).startswith("dir-")
    assert_same_conversion(model, manylangs_converted, tiny)
    manifest = pathlib.Path(model.directory, MANIFEST).read_text()
    assert resolve_model(str(tiny)) == model
    assert pathlib.Path(model.directory, MANIFEST).read_text() == manifest


def test_a_local_archive(tmp_path, cache_dir, served_files,
                         manylangs_converted, manylangs_fixtures):
    archive = tmp_path / "zhs.model.tar.bz2"
    archive.write_bytes(served_files[ZHS_TAR])
    model = resolve_model(archive)
    assert model.name == "zhs.model" and model.spec == str(archive)
    assert os.path.basename(model.directory).startswith("file-")
    assert_same_conversion(model, manylangs_converted,
                           manylangs_fixtures / "tiny.model")
    assert archive.exists()  # the user's archive is left as it was
    assert resolve_model(archive) == model


# --- bad input: one line, nothing cached ------------------------------------

def test_a_body_cut_short_is_an_error_and_the_next_download_works(
        mirrored, cache_dir, manylangs_converted, manylangs_fixtures):
    mirrored.cut_short.add(ZH_ZIP)
    with pytest.raises(PretrainedModelError,
                       match=r"manylangs-zh: http://127\.0\.0\.1:\d+/"
                             r"repository/11/179\.zip: download cut short: "
                             r"expected [\d,]+ bytes \(Content-Length\), "
                             r"received [\d,]+") as error:
        resolve_model("manylangs-zh")
    assert_one_line(error)
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
    model = resolve_model("manylangs-zh")
    assert mirrored.requests[ZH_ZIP] == 2
    assert_same_conversion(model, manylangs_converted,
                           manylangs_fixtures / "tiny.model")


def test_a_cut_short_weight_file(mirrored, cache_dir, bilm_fixtures):
    mirrored.cut_short.add(ELMO_SMALL_WEIGHTS)
    with pytest.raises(PretrainedModelError, match="cut short"):
        resolve_model("elmo-small")
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
    model = resolve_model("elmo-small")
    assert (pathlib.Path(model.weight_file).read_bytes()
            == (bilm_fixtures / "model" / "lm_weights.hdf5").read_bytes())


def test_a_404(mirrored, cache_dir):
    # manylangs-ko (161.zip) is not served
    with pytest.raises(PretrainedModelError,
                       match=r"manylangs-ko: http://127\.0\.0\.1:\d+/"
                             r"repository/11/161\.zip: download failed: "
                             r"HTTP 404") as error:
        resolve_model("manylangs-ko")
    assert_one_line(error)
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}


def test_connection_refused(cache_dir):
    mirror = free_port_url()
    with pytest.raises(PretrainedModelError,
                       match="elmo-small: http://127.0.0.1:.*_options.json: "
                             "download failed: cannot connect") as error:
        resolve_model("elmo-small", mirror=mirror)
    assert_one_line(error)
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}


def test_an_unknown_name_says_how_to_list_the_names(cache_dir):
    with pytest.raises(PretrainedModelError,
                       match=r"'elmo-smal': unknown model name \(did you "
                             r"mean elmo-small.*\); list the names with "
                             r"`bilm-keras models`") as error:
        resolve_model("elmo-smal")
    assert_one_line(error)
    assert not cache_dir.exists()


@pytest.mark.parametrize("spec, match", [
    ("no/such/model.zip", (r"no/such/model\.zip: no such file or directory "
                          r"\(expected a registry name")),
    ("ftp://example.org/model.zip", "expected an http:// or https:// URL"),
    ("", "expected a model name, URL, archive or directory"),
])
def test_bad_specs(spec, match, cache_dir):
    with pytest.raises(PretrainedModelError, match=match):
        resolve_model(spec)
    assert not cache_dir.exists()


def _archive_errors(tmp_path, files, match):
    archive = tmp_path / "bad.zip"
    archive.write_bytes(zip_bytes(files))
    with pytest.raises(PretrainedModelError, match=match) as error:
        resolve_model(archive)
    assert_one_line(error)
    assert cache_contents(tmp_path / "cache") == {"models": [], "tmp": []}


def test_an_archive_with_no_model(tmp_path, cache_dir):
    _archive_errors(
        tmp_path, {"docs/README": b"hello", "options.json": b"{}"},
        r"bad\.zip: expected a model at its root or inside one folder .* "
        r"found none \(contents: docs/, options\.json\)")


def test_an_archive_with_two_models(tmp_path, cache_dir, bilm_fixtures,
                                    manylangs_fixtures):
    from model_server import bilm_tf_files, manylangs_files

    files = {f"a/{n}": d
             for n, d in bilm_tf_files(bilm_fixtures / "model").items()}
    files.update(manylangs_files(manylangs_fixtures / "tiny.model", "b/"))
    _archive_errors(tmp_path, files,
                    r"bad\.zip: expected one model, found 2: a/ \(bilm-tf\), "
                    r"b/ \(elmoformanylangs\)")


def test_an_archive_with_two_weight_files(tmp_path, cache_dir,
                                          bilm_fixtures):
    from model_server import bilm_tf_files

    files = bilm_tf_files(bilm_fixtures / "model")
    files["model2.hdf5"] = files["model.hdf5"]
    _archive_errors(tmp_path, files,
                    r"bad\.zip: \./: expected one weights HDF5, found 2: "
                    r"model\.hdf5, model2\.hdf5")


def test_a_manylangs_archive_that_cannot_be_converted(
        tmp_path, cache_dir, manylangs_fixtures):
    from model_server import manylangs_files

    files = manylangs_files(manylangs_fixtures / "tiny.model", "m/")
    files["m/config.json"] = b'{"config_path": "nowhere.json"}'
    _archive_errors(tmp_path, files,
                    r"bad\.zip: cannot convert the ELMoForManyLangs model: "
                    r"m/config\.json: field 'config_path'")


def test_a_url_that_is_not_an_archive(model_server, cache_dir):
    url = model_server.url + ELMO_SMALL_OPTIONS
    with pytest.raises(PretrainedModelError,
                       match=r"_options\.json: expected an archive "
                             r"\(\.zip, .*found a file that is neither"):
        resolve_model(url)
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}


def test_a_weight_url_that_serves_something_else(mirrored, cache_dir):
    mirrored.routes[ELMO_SMALL_WEIGHTS] = b"<html>moved</html>"
    with pytest.raises(PretrainedModelError,
                       match=r"elmo-small: http://.*_weights\.hdf5: expected "
                             r"a weights HDF5 file, found 18 bytes"):
        resolve_model("elmo-small")
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}


def test_an_unwritable_cache_is_named(tmp_path, mirrored, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BILM_KERAS_CACHE", str(blocker / "cache"))
    with pytest.raises(PretrainedModelError,
                       match=r"a-file/cache: expected a writable model cache "
                             r"\(set BILM_KERAS_CACHE"):
        resolve_model("elmo-small")


# --- list_models, progress ----------------------------------------------------

def test_list_models_shows_what_is_cached(mirrored, cache_dir):
    before = {m.model.name: m for m in list_models()}
    assert len(before) == len(registered_models())
    assert not any(m.cached for m in before.values())
    resolve_model("elmo-small")
    after = {m.model.name: m for m in list_models()}
    small = after["elmo-small"]
    assert small.cached and small.directory.endswith("elmo-small")
    assert small.cached_bytes > 450_000
    assert [n for n, m in after.items() if m.cached] == ["elmo-small"]
    assert after["manylangs-zh"].model.language == "Chinese (traditional)"


def test_progress_on_request_only(mirrored, cache_dir, capsys):
    resolve_model("manylangs-zh", progress=False)
    assert capsys.readouterr().err == ""
    resolve_model(mirrored.url + ZH_ZIP, progress=True)
    err = capsys.readouterr().err
    assert "179.zip:" in err and "100%" in err
    assert "converting the ELMoForManyLangs model" in err


def test_a_cache_entry_changed_by_hand_is_named(mirrored, cache_dir):
    model = resolve_model("elmo-small")
    os.remove(model.weight_file)
    with pytest.raises(PretrainedModelError,
                       match=r"models/elmo-small: expected a cached model "
                             r"with lm_weights\.hdf5, found none; remove "):
        resolve_model("elmo-small")
    pathlib.Path(model.directory, MANIFEST).write_text("[1, 2]")
    with pytest.raises(PretrainedModelError,
                       match=r"bilm_keras_model\.json: expected a cached "
                             r"model's manifest \(a JSON object\)"):
        resolve_model("elmo-small")


# --- the kind of a SPEC, without fetching it ----------------------------------

def test_check_model_spec_fetches_nothing(tmp_path, cache_dir, served_files,
                                          bilm_fixtures):
    from bilm_keras.pretrained import check_model_spec

    archive = tmp_path / "zhs.model.tar.bz2"
    archive.write_bytes(served_files[ZHS_TAR])
    assert check_model_spec("elmo-small") == "name"
    assert check_model_spec("https://example.org/elmo.zip") == "url"
    assert check_model_spec(bilm_fixtures / "model") == "directory"
    assert check_model_spec(archive) == "archive"
    for spec, message in [
            ("elmo-smal", "'elmo-smal': unknown model name (did you mean "
                          "elmo-small"),
            ("ftp://example.org/elmo.zip", "expected an http:// or "
                                           "https:// URL"),
            ("  ", "expected a model name, URL, archive or directory"),
            (str(tmp_path / "gone.zip"), "no such file or directory")]:
        with pytest.raises(PretrainedModelError, match=re.escape(message)):
            check_model_spec(spec)
    assert not cache_dir.exists()
