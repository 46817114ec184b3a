"""The options presets: every preset is a valid options file of the
top-level ``options/``, found by name from this checkout (as on
``PYTHONPATH``); a name that is no preset is one line listing them; a
path stays a path (bilm-tf users pass paths). The wheel and an editable
install find them too: ``tests/test_wheel_install.py`` (slow)."""

import json
import pathlib

import pytest

from helpers import REPO_ROOT

from bilm_keras.options import BiLMOptions
from bilm_keras.presets import (
    PRESETS,
    PresetError,
    load_preset,
    options_file,
    preset_file,
)

OPTIONS = REPO_ROOT / "options"


def test_every_preset_is_a_json_file_of_options():
    files = sorted(p.stem for p in OPTIONS.glob("*.json"))
    assert files == sorted(PRESETS)
    for name in PRESETS:
        path = pathlib.Path(preset_file(name))
        assert path == OPTIONS / f"{name}.json" and path.is_file()
        assert load_preset(name) == BiLMOptions.from_json(path)
    # one copy: none inside the package (its one JSON file: the registry)
    assert [p.relative_to(REPO_ROOT).as_posix()
            for p in (REPO_ROOT / "bilm_keras").rglob("*.json")] == [
        "bilm_keras/pretrained/registry.json"]


def test_the_presets_sizes():
    # tiny trains in minutes on a CPU; the published size is AllenNLP's
    # elmo-original (2 x 4096 LSTMs projected to 512, 2048 filters)
    tiny, small, published = (load_preset(name) for name in PRESETS)
    assert (tiny.lstm.dim, tiny.lstm.projection_dim) == (128, 32)
    assert (small.lstm.dim, small.lstm.projection_dim) == (1024, 128)
    assert (published.lstm.dim, published.lstm.projection_dim) == (4096,
                                                                   512)
    assert sum(n for _, n in published.char_cnn.filters) == 2048
    assert published.char_cnn.n_highway == 2


def test_the_wheel_ships_options_as_the_presets_data(monkeypatch):
    # setup.py maps options/ onto bilm_keras.presets.files (the slow wheel
    # test builds one, installs it and runs `bilm-keras pipeline`)
    import setuptools

    seen = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: seen.update(kw))
    monkeypatch.chdir(REPO_ROOT)
    exec(compile((REPO_ROOT / "setup.py").read_text(), "setup.py", "exec"),
         {"__name__": "__main__"})
    assert seen["package_dir"] == {"bilm_keras.presets.files": "options"}
    assert "bilm_keras.presets.files" in seen["packages"]
    assert seen["package_data"]["bilm_keras.presets.files"] == ["*.json"]


def test_options_file_takes_a_name_or_a_path(tmp_path, monkeypatch):
    assert options_file("small") == preset_file("small")
    mine = tmp_path / "my.json"
    mine.write_text(json.dumps({"lstm": {"dim": 8}}))
    assert options_file(mine) == str(mine)
    # a path is returned as given: whoever reads it says if it is missing
    assert options_file("nowhere/options.json") == "nowhere/options.json"
    assert options_file("gone.json") == "gone.json"
    # a preset's name wins; a file of that name is reached as ./NAME
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").write_text("{}")
    assert options_file("tiny") == preset_file("tiny")
    assert options_file("./tiny") == "./tiny"
    (tmp_path / "mine").write_text("{}")  # a bare name that is a file
    assert options_file("mine") == "mine"


@pytest.mark.parametrize("name,hint", [
    ("smal", " (did you mean small?)"),
    ("tyni", " (did you mean tiny?)"),
    ("published", ""),
])
def test_an_unknown_name_lists_the_presets(name, hint):
    with pytest.raises(PresetError) as error:
        options_file(name)
    assert str(error.value) == (
        "expected a preset name (tiny, small, "
        "elmo_2x4096_512_2048cnn_2xhighway) or an options JSON file, found "
        f"{name!r}: no such preset or file{hint}")
    with pytest.raises(PresetError, match="expected a preset name"):
        preset_file("smal")
