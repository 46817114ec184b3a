"""The ``elmoformanylangs`` section of a converted model's options.json."""

import json
import os

import pytest

from bilm_keras.options import BiLMOptions, ManyLangsOptions, OptionsError
from helpers import MANYLANGS_TINY_OPTIONS as CONVERTED


def _write(tmp_path, options, name="options.json"):
    path = tmp_path / name
    path.write_text(json.dumps(options))
    return path


def test_section_parsed_and_paths_resolved(tmp_path):
    options = BiLMOptions.from_json(_write(tmp_path, CONVERTED))
    assert options.manylangs == ManyLangsOptions(
        char_dic=str(tmp_path / "char.dic"),
        word_dic=str(tmp_path / "word.dic"),
        word_embedding_dim=8, n_words=78)
    assert options.manylangs.has_word_part
    # the 261/262 rule is bilm-tf's byte vocabulary only
    assert options.char_cnn.n_characters == 107


def test_round_trip_writes_relative_paths(tmp_path):
    options = BiLMOptions.from_json(_write(tmp_path, CONVERTED))
    assert options.to_dict()["elmoformanylangs"] == \
        CONVERTED["elmoformanylangs"]
    out = tmp_path / "again.json"
    options.to_json(out)
    written = json.loads(out.read_text())
    assert written["elmoformanylangs"] == CONVERTED["elmoformanylangs"]
    assert BiLMOptions.from_json(out) == options


def test_absolute_and_outside_paths(tmp_path):
    elsewhere = tmp_path / "dics"
    model = tmp_path / "model"
    model.mkdir()
    section = {"char_dic": str(elsewhere / "char.dic"), "word_dic": None,
               "word_embedding_dim": 0, "n_words": 0}
    options = BiLMOptions.from_json(
        _write(model, {**CONVERTED, "elmoformanylangs": section}))
    assert options.manylangs.char_dic == str(elsewhere / "char.dic")
    assert options.manylangs.word_dic is None
    assert not options.manylangs.has_word_part
    # outside the folder written to: stays absolute (still the same file)
    out = model / "copy.json"
    options.to_json(out)
    assert json.loads(out.read_text())["elmoformanylangs"] == section
    # a relative path that leaves the folder is resolved, and found again
    section = {**section, "char_dic": os.path.join("..", "dics", "char.dic")}
    options = BiLMOptions.from_json(
        _write(model, {**CONVERTED, "elmoformanylangs": section}))
    assert options.manylangs.char_dic == str(elsewhere / "char.dic")


def test_bilm_tf_options_have_no_section(model_dir):
    options = BiLMOptions.from_json(model_dir / "options.json")
    assert options.manylangs is None
    assert "elmoformanylangs" not in options.to_dict()


@pytest.mark.parametrize(
    "change,match",
    [
        ({"word_embedding_dim": "8"},
         "field 'elmoformanylangs.word_embedding_dim': expected an integer, "
         "found '8'"),
        ({"word_embedding_dim": -1},
         "field 'elmoformanylangs.word_embedding_dim': expected an integer "
         ">= 0, found -1"),
        ({"word_dic": None},
         r"field 'elmoformanylangs.word_dic': expected a path "
         r"\(word_embedding_dim > 0\), found None"),
        ({"n_words": 0},
         "field 'elmoformanylangs.n_words': expected a positive integer"),
        ({"word_embedding_dim": 0},
         r"field 'elmoformanylangs.word_dic': expected null "
         r"\(word_embedding_dim is 0\), found 'word.dic'"),
        ({"char_dic": 3},
         "field 'elmoformanylangs.char_dic': expected a string, found 3"),
    ],
)
def test_bad_section(tmp_path, change, match):
    section = {**CONVERTED["elmoformanylangs"], **change}
    path = _write(tmp_path, {**CONVERTED, "elmoformanylangs": section},
                  "bad.json")
    with pytest.raises(OptionsError, match=f"bad.json: {match}"):
        BiLMOptions.from_json(path)


def test_bad_section_shape_and_sizes(tmp_path):
    path = _write(tmp_path, {**CONVERTED, "elmoformanylangs": ["char.dic"]},
                  "bad.json")
    with pytest.raises(OptionsError, match="bad.json: field "
                       "'elmoformanylangs': expected a JSON object"):
        BiLMOptions.from_json(path)
    section = {k: v for k, v in CONVERTED["elmoformanylangs"].items()
               if k != "char_dic"}
    path = _write(tmp_path, {**CONVERTED, "elmoformanylangs": section},
                  "bad.json")
    with pytest.raises(OptionsError, match="bad.json: missing field "
                       "'elmoformanylangs.char_dic'"):
        BiLMOptions.from_json(path)
    no_cnn = {k: v for k, v in CONVERTED.items() if k != "char_cnn"}
    with pytest.raises(OptionsError, match="bad.json: missing field "
                       "'char_cnn'"):
        BiLMOptions.from_json(_write(tmp_path, no_cnn, "bad.json"))
    cnn = {**CONVERTED["char_cnn"], "max_characters_per_token": 6}
    with pytest.raises(OptionsError, match="bad.json: field 'char_cnn."
                       "max_characters_per_token': expected at least 7"):
        BiLMOptions.from_json(
            _write(tmp_path, {**CONVERTED, "char_cnn": cnn}, "bad.json"))
    cnn = {**CONVERTED["char_cnn"], "n_characters": 1}
    with pytest.raises(OptionsError, match="bad.json: field 'char_cnn."
                       "n_characters': expected rows of char.dic"):
        BiLMOptions.from_json(
            _write(tmp_path, {**CONVERTED, "char_cnn": cnn}, "bad.json"))
