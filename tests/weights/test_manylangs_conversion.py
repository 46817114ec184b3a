"""ELMoForManyLangs conversion: the fixture's tiny.model, converted as it is,
run through an independent numpy forward pass in bilm-tf's equations
(tests/numpy_reference.py, no bilm_keras model), equals the embeddings
upstream's own code computed; and every bad input is one line naming the
file and the field, with nothing written."""

import json
import logging
import shutil

import h5py
import numpy as np
import pytest

import numpy_reference as nr
from helpers import MANYLANGS_TINY_OPTIONS, require_extra

from bilm_keras import cli
from bilm_keras._utils.atomic_files import OutputDirectoryError
from bilm_keras.data.manylangs_dictionaries import ManyLangsDictionaryError
from bilm_keras.weights import manylangs_conversion as conversion
from bilm_keras.weights.manylangs_config import (
    ManyLangsConfigError,
    read_model_config,
    resolve_config_path,
)
from bilm_keras.weights.manylangs_conversion import convert_manylangs
from bilm_keras.weights.manylangs_pkl import ManyLangsWeightError

TINY_CONFIG = "cnn_6_8_16_64_tiny.json"


@pytest.fixture(scope="module")
def torch():
    return require_extra("torch", "torch")


@pytest.fixture(scope="module")
def tiny_model(manylangs_fixtures):
    return manylangs_fixtures / "tiny.model"


@pytest.fixture(scope="module")
def converted(tiny_model, tmp_path_factory):
    """The fixture's tiny.model, as released, converted once."""
    out = tmp_path_factory.mktemp("manylangs") / "tiny-elmo"
    result = convert_manylangs(tiny_model, out)
    return out, result


@pytest.fixture
def model_copy(tiny_model, tmp_path):
    """A copy of tiny.model to break, and the OUT it must not create."""
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    return model, tmp_path / "out"


def _assert_nothing_written(out):
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir()
            if p.name.startswith(f".{out.name}.")] == []


def test_converted_files(converted, tiny_model):
    out, result = converted
    assert result == {"outdir": str(out),
                      "options_file": str(out / "options.json"),
                      "weight_file": str(out / "lm_weights.hdf5")}
    assert sorted(p.name for p in out.iterdir()) == [
        "char.dic", "lm_weights.hdf5", "options.json", "word.dic"]
    for name in ("char.dic", "word.dic"):
        assert (out / name).read_bytes() == (tiny_model / name).read_bytes()
    assert json.loads((out / "options.json").read_text()) == (
        MANYLANGS_TINY_OPTIONS)
    with h5py.File(out / "lm_weights.hdf5", "r") as f:
        assert f["char_embed"].shape == (106, 6)
        assert f["word_embed"].shape == (78, 8)
        assert f["CNN_proj/W_proj"].shape == (68, 16)
        assert f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"].shape == (
            32, 256)
        assert {f[k].dtype for k in ("char_embed", "CNN/W_cnn_3")} == {
            np.dtype("float32")}


def test_converted_weights_reproduce_upstream(converted, manylangs_fixtures):
    """bilm-tf's equations on the converted HDF5, fed upstream's own ids
    (shifted by +1: 0 is padding), give upstream's layers for all 15
    sentences, in one padded batch."""
    out, _ = converted
    nr.assert_reproduces_manylangs_reference(
        out, manylangs_fixtures / "reference.hdf5")


def test_cli_converts_and_refuses_a_full_outdir(tiny_model, tmp_path, capsys):
    out = tmp_path / "elmo"
    args = ["convert-manylangs", "--model_dir", str(tiny_model),
            "--outdir", str(out)]
    assert cli.main(args) == 0
    assert "wrote" in capsys.readouterr().out
    before = (out / "lm_weights.hdf5").stat().st_mtime_ns
    assert cli.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("bilm-keras convert-manylangs: error: ")
    assert "found one with files (pass overwrite=True / --overwrite" in err
    assert (out / "lm_weights.hdf5").stat().st_mtime_ns == before
    (out / "stale.txt").write_text("x")
    assert cli.main(args + ["--overwrite"]) == 0
    assert not (out / "stale.txt").exists()
    assert (out / "options.json").exists()


# --------------------------------------------------------------- bad input
def _edit_json(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _resave(torch, path, edit):
    """Loads a .pkl, edits its state dict, writes it back in the legacy
    (non-zip) serialization that torch 0.4 wrote."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    edit(state)
    torch.save(state, path, _use_new_zipfile_serialization=False)


def _fails(model, out, error, pattern, capsys=None):
    with pytest.raises(error, match=pattern) as info:
        convert_manylangs(model, out)
    assert "\n" not in str(info.value)
    _assert_nothing_written(out)
    if capsys is not None:  # the command: exit 1, the same one line
        code = cli.main(["convert-manylangs", "--model_dir", str(model),
                         "--outdir", str(out)])
        err = capsys.readouterr().err
        assert code == 1 and len(err.strip().splitlines()) == 1
        assert str(info.value) in err
        _assert_nothing_written(out)


def test_no_config_json(model_copy, capsys):
    model, out = model_copy
    (model / "config.json").unlink()
    _fails(model, out, ManyLangsConfigError,
           r"config\.json: expected ELMoForManyLangs' training arguments "
           r"\(with 'config_path'\), found no such file", capsys)


def test_config_found_nowhere(model_copy):
    model, out = model_copy
    (model / TINY_CONFIG).unlink()
    _fails(model, out, ManyLangsConfigError,
           r"config\.json: field 'config_path': expected a model config at "
           r".*, found 'cnn_6_8_16_64_tiny\.json' in none of them")


@pytest.mark.parametrize("name", ["token_embedder.pkl", "encoder.pkl"])
def test_missing_pkl(model_copy, name, capsys):
    model, out = model_copy
    (model / name).unlink()
    _fails(model, out, ManyLangsWeightError,
           rf"{name}: expected the model's state dict, found no such file",
           capsys)


@pytest.mark.parametrize("section", ["encoder", "token_embedder"])
def test_lstm_variants_not_supported(model_copy, section, capsys):
    model, out = model_copy
    _edit_json(model / TINY_CONFIG,
               lambda c: c[section].update(name="lstm"))
    _fails(model, out, ManyLangsConfigError,
           rf"{TINY_CONFIG}: field '{section}\.name': found 'lstm', not "
           r"supported \(expected '(elmo|cnn)'", capsys)


def test_config_field_of_wrong_type(model_copy):
    model, out = model_copy
    _edit_json(model / TINY_CONFIG,
               lambda c: c["encoder"].update(projection_dim="16"))
    _fails(model, out, ManyLangsConfigError,
           rf"{TINY_CONFIG}: field 'encoder\.projection_dim': expected an "
           r"integer >= 1, found '16'")


def test_state_dict_key_missing(model_copy, torch, capsys):
    model, out = model_copy
    _resave(torch, model / "token_embedder.pkl",
            lambda s: s.pop("projection.bias"))
    _fails(model, out, ManyLangsWeightError,
           r"token_embedder\.pkl: key 'projection\.bias': expected shape "
           r"\(16,\), found no such key", capsys)


def test_state_dict_wrong_shape(model_copy, torch, capsys):
    model, out = model_copy

    def edit(state):
        key = "backward_layer_1.state_linearity.weight"
        state[key] = state[key][:, :15].clone()

    _resave(torch, model / "encoder.pkl", edit)
    _fails(model, out, ManyLangsWeightError,
           r"encoder\.pkl: key 'backward_layer_1\.state_linearity\.weight': "
           r"expected shape \(256, 16\), found \(256, 15\)", capsys)


def test_state_dict_extra_key(model_copy, torch):
    model, out = model_copy

    def edit(state):
        state["highways._layers.2.weight"] = torch.zeros(120, 60)

    _resave(torch, model / "token_embedder.pkl", edit)
    _fails(model, out, ManyLangsWeightError,
           r"token_embedder\.pkl: key 'highways\._layers\.2\.weight': "
           r"expected no such key \(the config has no layer for it\), found "
           r"shape \(120, 60\)")


def test_dictionary_that_does_not_fit_the_weights(model_copy):
    model, out = model_copy
    with open(model / "char.dic", "a", encoding="utf-8") as f:
        f.write("\u00e9\t106\n")
    _fails(model, out, ManyLangsWeightError,
           r"token_embedder\.pkl: key 'char_emb_layer\.embedding\.weight': "
           r"expected shape \(107, 6\), found \(106, 6\)")


def test_dictionary_line_not_token_tab_id(model_copy, capsys):
    model, out = model_copy
    with open(model / "word.dic", "a", encoding="utf-8") as f:
        f.write("New\tYork\t78\n")
    _fails(model, out, ManyLangsDictionaryError,
           r"word\.dic: line 79: expected 'token<TAB>id' \(one tab, an "
           r"integer id\), found 'New\\tYork\\t78\\n'", capsys)


def test_not_a_state_dict(model_copy, capsys):
    model, out = model_copy
    (model / "encoder.pkl").write_bytes(b"not a pickle")
    _fails(model, out, ManyLangsWeightError,
           r"encoder\.pkl: expected a PyTorch file \(a zip archive of torch "
           r">= 1\.6, or a pickle starting with b'\\x80' of older torch\), "
           r"found b'not a pi'$", capsys)


def test_converts_with_torch_not_importable(model_copy, converted,
                                            monkeypatch):
    """The .pkl files are read without torch (tests/weights/
    test_manylangs_without_torch.py checks it in a fresh process)."""
    model, out = model_copy
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    convert_manylangs(model, out)
    expected = nr.load_hdf5_weights(converted[0] / "lm_weights.hdf5")
    got = nr.load_hdf5_weights(out / "lm_weights.hdf5")
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])


def test_failed_write_leaves_nothing(model_copy, torch, monkeypatch):
    model, out = model_copy

    def broken_copy(src, dst):
        raise OSError(f"{dst}: disk full")

    monkeypatch.setattr(conversion.shutil, "copyfile", broken_copy)
    with pytest.raises(OSError, match="disk full"):
        convert_manylangs(model, out)
    _assert_nothing_written(out)


# -------------------------------------------------- finding the model config
def test_stale_absolute_config_path_found_by_name(model_copy, caplog):
    model, out = model_copy
    stale = f"/home/someone/elmo/configs/{TINY_CONFIG}"
    _edit_json(model / "config.json", lambda c: c.update(config_path=stale))
    with caplog.at_level(logging.WARNING):
        convert_manylangs(model, out)
    assert f"{stale} not found; using {model / TINY_CONFIG}" in caplog.text
    assert json.loads((out / "options.json").read_text())["lstm"]["dim"] == 64


def test_packaged_configs(tmp_path, caplog):
    (tmp_path / "config.json").write_text(json.dumps(
        {"config_path": "/data/x/cnn_50_100_512_4096_sample.json"}))
    with caplog.at_level(logging.WARNING):
        assert resolve_config_path(
            tmp_path, "/data/x/cnn_50_100_512_4096_sample.json"
        ) == "packaged:cnn_50_100_512_4096_sample.json"
    assert "using upstream's packaged" in caplog.text
    config = read_model_config(tmp_path)
    assert (config.projection_dim, config.lstm_dim, config.n_layers) == (
        512, 4096, 2)
    assert config.filters == ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256),
                              (6, 512), (7, 1024))
    assert (config.word_dim, config.char_dim, config.n_highway,
            config.max_characters_per_token, config.cell_clip,
            config.proj_clip, config.dropout) == (
        100, 50, 2, 50, 3.0, 3.0, 0.1)
    # a file of that name in the model directory comes first
    (tmp_path / "cnn_0_100_512_4096_sample.json").write_text("{}")
    assert resolve_config_path(
        tmp_path, "cnn_0_100_512_4096_sample.json"
    ) == str(tmp_path / "cnn_0_100_512_4096_sample.json")


def test_outdir_is_a_file(model_copy):
    model, out = model_copy
    out.write_text("x")
    with pytest.raises(OutputDirectoryError,
                       match=r"out: expected a directory to write, found a "
                             r"file"):
        convert_manylangs(model, out)


def test_model_without_word_part(model_copy, torch):
    """word_dim 0: upstream reads no word.dic and projects the char part
    alone; options.json says so and no word.dic is copied."""
    model, out = model_copy
    _edit_json(model / TINY_CONFIG,
               lambda c: c["token_embedder"].update(word_dim=0))

    def edit(state):
        state.pop("word_emb_layer.embedding.weight")
        state["projection.weight"] = state["projection.weight"][:, 8:].clone()

    _resave(torch, model / "token_embedder.pkl", edit)
    (model / "word.dic").unlink()
    convert_manylangs(model, out)
    assert sorted(p.name for p in out.iterdir()) == [
        "char.dic", "lm_weights.hdf5", "options.json"]
    options = json.loads((out / "options.json").read_text())
    assert options["elmoformanylangs"] == {
        "char_dic": "char.dic", "word_dic": None, "word_embedding_dim": 0,
        "n_words": 0}
    with h5py.File(out / "lm_weights.hdf5", "r") as f:
        assert "word_embed" not in f
        assert f["CNN_proj/W_proj"].shape == (60, 16)


def test_pkl_saved_on_a_gpu(model_copy, converted):
    """Released files were saved from CUDA tensors: their storages name
    'cuda:0'. map_location='cpu' reads them on a machine without one."""
    model, out = model_copy
    for name in ("token_embedder.pkl", "encoder.pkl"):
        raw = (model / name).read_bytes()
        # the legacy pickle stores the location string once (memoized)
        assert raw.count(b"X\x03\x00\x00\x00cpu") == 1
        (model / name).write_bytes(
            raw.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"))
    convert_manylangs(model, out)
    expected = nr.load_hdf5_weights(converted[0] / "lm_weights.hdf5")
    got = nr.load_hdf5_weights(out / "lm_weights.hdf5")
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])


def test_pkl_that_would_run_code_is_refused(model_copy, tmp_path):
    """A .pkl whose pickle calls a function is refused (one line), and the
    function never runs."""
    import os
    import pickle

    model, out = model_copy
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    (model / "encoder.pkl").write_bytes(pickle.dumps(Payload(), protocol=2))
    _fails(model, out, ManyLangsWeightError,
           r"encoder\.pkl: refused global 'posix\.mkdir' in torch's magic "
           r"number: a PyTorch state dict holds tensors only")
    assert not marker.exists()
