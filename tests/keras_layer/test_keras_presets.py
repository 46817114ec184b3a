"""Presets in keras-hub's layout: save_to_preset, from_preset (a folder
or hf://), keras_hub.models.Backbone.from_preset, and the bad presets
and newer format versions."""

import contextlib
import json
import os
import shutil
import subprocess
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import ELMoEmbedding, ELMoPreprocessor
from bilm_keras.data.batcher_for_options import batcher_for_options
from bilm_keras.options import BiLMOptions
from helpers import (
    REPO_ROOT,
    python_argv,
    require_extra,
    require_installed,
)

SENTENCES = tf.constant(["The cat sat on the mat .", "Dogs bark", "<S> x"])
PRESET_FILES = ["assets", "config.json", "metadata.json", "model.weights.h5",
                "preprocessor.json"]


@pytest.fixture(scope="module")
def layer(model_dir):
    return ELMoEmbedding.from_pretrained(model_dir, output="layers")


@pytest.fixture(scope="module")
def preset(layer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("presets") / "elmo"
    layer.save_to_preset(folder)
    return folder


@pytest.fixture(scope="module")
def expected(layer):
    return np.asarray(layer(SENTENCES))


def test_layout_is_keras_hubs(preset):
    assert sorted(os.listdir(preset)) == PRESET_FILES
    config = json.loads((preset / "config.json").read_text())
    assert config["registered_name"] == "bilm_keras>ELMoBackbone"
    assert config["config"]["format_version"] == 1
    metadata = json.loads((preset / "metadata.json").read_text())
    assert metadata["parameter_count"] > 0 and metadata["tasks"] == []
    preprocessor = json.loads((preset / "preprocessor.json").read_text())
    assert preprocessor["registered_name"] == "bilm_keras>ELMoPreprocessor"


@pytest.mark.slow
def test_from_preset_gives_the_same_layer(preset, expected):
    again = ELMoEmbedding.from_preset(preset, output="layers")
    np.testing.assert_array_equal(np.asarray(again(SENTENCES)), expected)


@pytest.mark.slow  # importing keras-hub: about 10 s on the EPYC
def test_keras_hub_loads_it(preset, layer, expected):
    keras_hub = require_extra("keras_hub", "keras_hub")
    backbone = keras_hub.models.Backbone.from_preset(str(preset))
    assert type(backbone).__name__ == "ELMoBackbone"
    ids = ELMoPreprocessor.from_preset(preset)(SENTENCES)
    np.testing.assert_array_equal(np.asarray(backbone(ids)), expected)
    # and keras-hub writes it back in the same layout
    again = preset.parent / "from_keras_hub"
    backbone.save_to_preset(str(again))
    assert {"config.json", "model.weights.h5", "metadata.json"} <= set(
        os.listdir(again))


#: a fresh process, bilm_keras imported before keras_hub, as a user's
_KERAS_HUB_AFTER = """
import sys
import bilm_keras
import keras_hub
backbone = keras_hub.models.Backbone.from_preset(sys.argv[1])
print(type(backbone).__name__, backbone.output_shape)
"""


@pytest.mark.slow  # importing keras-hub in a child: about 30 s
def test_keras_hub_loads_it_after_import_bilm_keras(preset):
    require_installed("keras_hub", "keras_hub")
    # a child of the command server: bilm_keras imported, keras_hub not
    proc = subprocess.run(
        python_argv() + ["-c", _KERAS_HUB_AFTER, str(preset)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "ELMoBackbone"


def test_resolve_model_names_a_preset_on_the_hub(preset, tmp_path,
                                                monkeypatch):
    require_extra("huggingface_hub", "hf")
    from bilm_keras.pretrained import PretrainedModelError, resolve_model

    with _hub_serving(preset, tmp_path, monkeypatch):
        with pytest.raises(PretrainedModelError, match=(
                r"^hf://owner/elmo-preset: a Keras preset \(bilm_keras>"
                r"ELMoBackbone\), not a model in bilm-tf's layout: load it "
                r"with ELMoEmbedding.from_preset$")):
            resolve_model("hf://owner/elmo-preset")


@pytest.mark.slow
def test_manylangs_preset_keeps_its_dictionaries(manylangs_converted,
                                                 tmp_path):
    layer = ELMoEmbedding.from_pretrained(
        manylangs_converted["outdir"], output="layers")
    layer.save_to_preset(tmp_path / "zh")
    assert sorted(os.listdir(tmp_path / "zh" / "assets" / "tokenizer")) == [
        "char.dic", "word.dic"]
    preprocessor = ELMoPreprocessor.from_preset(tmp_path / "zh")
    options = BiLMOptions.from_json(manylangs_converted["options_file"])
    text = ["今天 天氣 很好", "x"]
    sentences = tf.constant(text)
    np.testing.assert_array_equal(
        preprocessor(sentences),
        batcher_for_options(options).batch_sentences(
            [s.split() for s in text]))
    again = ELMoEmbedding.from_preset(tmp_path / "zh", output="layers")
    np.testing.assert_array_equal(np.asarray(again(sentences)),
                                  np.asarray(layer(sentences)))


@contextlib.contextmanager
def _hub_serving(preset, cache, monkeypatch):
    """The preset as the repository owner/elmo-preset of a local
    stand-in for the Hub (tests/pretrained/hub_server.py)."""
    from huggingface_hub import constants
    from hub_server import HubServer

    files = {}
    for root, _, names in os.walk(preset):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, preset)] = f.read()
    server = HubServer({"owner/elmo-preset": {"main": files}})
    try:
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.url + "/{repo_id}/resolve/{revision}/"
                                         "{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        yield server
    finally:
        server.close()


@pytest.mark.slow
def test_preset_over_hf(preset, expected, tmp_path, monkeypatch):
    require_extra("huggingface_hub", "hf")
    with _hub_serving(preset, tmp_path, monkeypatch):
        layer = ELMoEmbedding.from_preset("hf://owner/elmo-preset",
                                          output="layers")
        np.testing.assert_array_equal(np.asarray(layer(SENTENCES)),
                                      expected)


# ------------------------------------------------------------ bad input
def _copy(preset, tmp_path, name="bad"):
    folder = tmp_path / name
    shutil.copytree(preset, folder)
    return folder


def _edit_config(folder, edit):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    edit(config)
    path.write_text(json.dumps(config))


def test_config_of_another_class(preset, tmp_path):
    folder = _copy(preset, tmp_path)
    _edit_config(folder, lambda c: c.update(
        registered_name="keras_hub>BertBackbone"))
    with pytest.raises(ValueError, match=(
            r"bad: config.json: registered_name: expected "
            r"'bilm_keras>ELMoBackbone' \(a preset of ELMoEmbedding."
            r"save_to_preset\), found 'keras_hub>BertBackbone'")):
        ELMoEmbedding.from_preset(folder)


def test_weights_that_do_not_fit_the_config(preset, tmp_path):
    folder = _copy(preset, tmp_path)

    def wider(config):
        config["config"]["options"]["lstm"]["projection_dim"] *= 2
    _edit_config(folder, wider)
    with pytest.raises(ValueError, match=(
            r"bad: model.weights.h5: the weights do not fit config.json: "
            r".*expected .* from the options, found")):
        ELMoEmbedding.from_preset(folder)


def test_newer_format_version_in_a_preset(preset, tmp_path):
    folder = _copy(preset, tmp_path)
    _edit_config(folder, lambda c: c["config"].update(format_version=2))
    with pytest.raises(ValueError, match=(
            r"bad: config.json: format_version: expected at most 1 .*found "
            r"2: the file was written by a newer bilm_keras; upgrade")):
        ELMoEmbedding.from_preset(folder)


def test_newer_format_version_in_a_keras_file(layer, tmp_path):
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, layer(text))
    path = tmp_path / "model.keras"
    model.save(path)
    newer = tmp_path / "newer.keras"
    with zipfile.ZipFile(path) as old, zipfile.ZipFile(newer, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                for entry in config["config"]["layers"]:
                    if entry["class_name"] == "ELMoEmbedding":
                        entry["config"]["format_version"] = 7
                data = json.dumps(config).encode()
            new.writestr(item, data)
    with pytest.raises(Exception, match=(
            r"format_version: expected at most 1 .*found 7: the file was "
            r"written by a newer bilm_keras")):
        keras.models.load_model(newer)


def test_save_refuses_a_non_empty_folder(layer, tmp_path):
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match="taken"):
        layer.save_to_preset(folder)
    assert os.listdir(folder) == ["mine.txt"]
    assert sorted(os.listdir(tmp_path)) == ["taken"]


def test_a_failed_save_writes_nothing(layer, tmp_path, monkeypatch):
    def fail(self, folder):
        raise OSError("disk gone")
    monkeypatch.setattr(ELMoPreprocessor, "save_assets", fail)
    with pytest.raises(OSError, match="disk gone"):
        layer.save_to_preset(tmp_path / "half")
    assert os.listdir(tmp_path) == []
