"""hf://OWNER/REPO[@REVISION] against a local stand-in for the Hub
(hub_server.py): bilm-tf repositories, bad handles, cut-short downloads,
offline mode. Never the real Hub."""

import os

import pytest

from bilm_keras.pretrained import PretrainedModelError, resolve_model
from bilm_keras.pretrained.hf_hub import files_to_fetch
from helpers import require_extra
from hub_server import HubServer

require_extra("huggingface_hub", "hf")


@pytest.fixture
def hub(model_dir, tmp_path, monkeypatch):
    """The server with a bilm-tf repository as the Hub holds them
    (``options.json`` + ``weights.hdf5``), a second revision, and one
    without weights; huggingface_hub pointed at it, its cache in
    tmp_path."""
    from huggingface_hub import constants

    options = (model_dir / "options.json").read_bytes()
    weights = (model_dir / "lm_weights.hdf5").read_bytes()
    server = HubServer({
        "owner/elmo": {
            "main": {"options.json": options, "weights.hdf5": weights,
                     "README.md": b"# ELMo\n"},
            "v1": {"options.json": options, "weights.hdf5": weights},
        },
        "owner/empty": {"main": {"options.json": options,
                                 "README.md": b"# no weights\n"}},
    })
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        server.url + "/{repo_id}/resolve/{revision}/"
                                     "{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield server
    server.close()


def _cached_files(tmp_path) -> list:
    root = tmp_path / "hf"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and ".locks" not in p.parts)


def test_bilm_tf_repository(hub, tmp_path, model_dir):
    model = resolve_model("hf://owner/elmo", cache_dir=tmp_path / "ours")
    assert model.format == "bilm-tf" and model.name == "elmo"
    assert open(model.weight_file, "rb").read() == (
        model_dir / "lm_weights.hdf5").read_bytes()
    assert os.path.basename(model.options_file) == "options.json"
    # the README is not fetched; nothing lands in our own cache
    assert not any("README" in f for f in _cached_files(tmp_path))
    assert not (tmp_path / "ours").exists()
    at_v1 = resolve_model("hf://owner/elmo@v1", cache_dir=tmp_path / "ours")
    assert at_v1.directory != model.directory


def test_offline_reads_the_cache(hub, tmp_path, monkeypatch):
    from huggingface_hub import constants

    online = resolve_model("hf://owner/elmo")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    before = sum(hub.requests.values())
    offline = resolve_model("hf://owner/elmo")
    assert offline.weight_file == online.weight_file
    assert sum(hub.requests.values()) == before
    with pytest.raises(PretrainedModelError,
                       match=r"^hf://owner/elmo@v1: not in the Hugging "
                             r"Face cache, and HF_HUB_OFFLINE is set"):
        resolve_model("hf://owner/elmo@v1")


@pytest.mark.slow
@pytest.mark.parametrize("spec, message", [
    ("hf://owner/missing", r"^hf://owner/missing: no repository "
                           r"owner/missing on the Hub"),
    ("hf://owner/elmo@v9", r"^hf://owner/elmo@v9: no revision 'v9' in the "
                           r"repository owner/elmo$"),
    ("hf://owner/empty", r"^hf://owner/empty: the repository holds no "
                         r"weights: expected a Keras preset \(config.json "
                         r"\+ model.weights.h5\) or bilm-tf's options JSON "
                         r"\+ a weights HDF5 \(.hdf5, .h5\), found "
                         r"README.md, options.json$"),
    ("hf://owner", r"^hf://owner: expected a Hugging Face handle"),
])
def test_bad_handles_are_one_line(hub, tmp_path, spec, message):
    with pytest.raises(PretrainedModelError, match=message) as caught:
        resolve_model(spec)
    assert "\n" not in str(caught.value)
    assert _cached_files(tmp_path) == []


@pytest.mark.slow
def test_cut_short_download_leaves_nothing(hub, tmp_path):
    hub.cut_short.add(("owner/elmo", "weights.hdf5"))
    with pytest.raises(PretrainedModelError,
                       match=r"^hf://owner/elmo: weights.hdf5: the download "
                             r"failed: ") as caught:
        resolve_model("hf://owner/elmo")
    assert "\n" not in str(caught.value)
    # no partial blob, and not the options fetched before it either
    assert [f for f in _cached_files(tmp_path)
            if "/blobs/" in f or "/snapshots/" in f] == []
    hub.cut_short.clear()
    assert resolve_model("hf://owner/elmo").format == "bilm-tf"


def test_files_to_fetch():
    preset = ["config.json", "model.weights.h5", "preprocessor.json",
              "metadata.json", "assets/tokenizer/vocab.txt", "README.md"]
    assert files_to_fetch(preset, "x") == [
        "config.json", "model.weights.h5", "preprocessor.json",
        "metadata.json", "assets/tokenizer/vocab.txt"]
    published = ["elmo_options.json", "elmo_weights.hdf5", "vocab.txt",
                 "deep/down/other.hdf5", ".gitattributes"]
    assert files_to_fetch(published, "x") == [
        "elmo_options.json", "vocab.txt", "elmo_weights.hdf5"]
