"""BiLMOptions: bilm-tf's options.json parsed once, with clear errors."""

import json

import pytest

from bilm_keras.options import BiLMOptions, OptionsError


def test_fixture_options_round_trip(model_dir, tmp_path):
    options = BiLMOptions.from_json(model_dir / "options.json")
    assert options.lstm.dim == 64 and options.lstm.projection_dim == 16
    assert options.lstm.cell_clip == 3.0
    assert options.char_cnn.filters == ((1, 4), (2, 8), (3, 16), (4, 32),
                                        (5, 64))
    assert options.char_cnn.n_filters == 124
    path = tmp_path / "options.json"
    options.to_json(path)
    assert BiLMOptions.from_json(path) == options
    original = json.loads((model_dir / "options.json").read_text())
    written = json.loads(path.read_text())
    assert written["lstm"] == {**original["lstm"],
                               "cell_clip": 3.0, "proj_clip": 3.0}
    assert written["char_cnn"] == original["char_cnn"]


def _bad(options, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(options))
    return BiLMOptions.from_json(path)


BASE = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 1},
        "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4]],
                     "n_characters": 261, "max_characters_per_token": 10,
                     "activation": "relu"}}


@pytest.mark.parametrize(
    "path,value,match",
    [
        (("lstm", "dim"), "big", "field 'lstm.dim': expected an integer, "
                                 "found 'big'"),
        (("char_cnn", "n_characters"), 300,
         "field 'char_cnn.n_characters': expected 261 or 262, found 300"),
        (("char_cnn", "activation"), "gelu",
         "'char_cnn.activation': expected 'relu' or 'tanh', found 'gelu'"),
        (("char_cnn", "filters"), [[1]], "'char_cnn.filters': expected a "
                                         "non-empty list"),
        (("char_cnn", "max_characters_per_token"), 2,
         "'char_cnn.max_characters_per_token': expected at least 3"),
        (("lstm", "use_skip_connections"), "yes",
         "'lstm.use_skip_connections': expected true or false"),
    ],
)
def test_bad_fields(tmp_path, path, value, match):
    options = json.loads(json.dumps(BASE))
    options[path[0]][path[1]] = value
    with pytest.raises(OptionsError, match=f"bad.json: (field )?{match}"):
        _bad(options, tmp_path)


def test_missing_section(tmp_path):
    with pytest.raises(OptionsError, match="missing field 'lstm'"):
        _bad({"char_cnn": BASE["char_cnn"]}, tmp_path)


def test_share_embedding_softmax_with_chars(tmp_path):
    with pytest.raises(OptionsError, match="share_embedding_softmax"):
        _bad({**BASE, "share_embedding_softmax": True}, tmp_path)


def test_not_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{nope")
    with pytest.raises(OptionsError, match="bad.json: not valid JSON"):
        BiLMOptions.from_json(path)
