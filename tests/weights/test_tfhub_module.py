"""TF1 Hub modules (tests/fixtures/tfhub_modules, made by bilm-tf's graph
and DeepPavlov's elmo2tfhub under tensorflow-hub 0.15) read into bilm-tf's
layout: the weights are the fixture model's HDF5 bit for bit, the options
are the fixture's, the graph's constants give clips and skip connections,
and the mix is the one the module learned; every bad module is one line,
with nothing written."""

import json
import pathlib
import shutil

import h5py
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.weights.learned_mix import MIX_FILE, read_mix
from bilm_keras.weights.tfhub_module import (
    TFHubModuleError,
    read_tfhub_module,
    write_converted,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
MODULES = FIXTURES / "tfhub_modules"
MODEL = FIXTURES / "bilm-tf" / "model"
#: the mixes make_fixtures.py set: (logits, scale)
MIXES = {"google": ([0.3, -0.5, 1.1], 0.75),
         "deeppavlov": ([-0.4, 0.9, 0.2], 1.3)}


def _datasets(path) -> dict:
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[...])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


@pytest.mark.parametrize("name, generation", [
    ("google", "tf>=1.5 model"), ("google_tf12", "tf1.2"),
    ("deeppavlov", "tf>=1.5 model")])
def test_module_converts_to_the_fixture_model(name, generation, tmp_path):
    module = read_tfhub_module(MODULES / name)
    assert module.generation == generation
    out = write_converted(module, tmp_path / "out")
    expected = _datasets(MODEL / "lm_weights.hdf5")
    got = _datasets(out["weight_file"])
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)
        assert got[key].dtype == np.float32
    fixture = json.loads((MODEL / "options.json").read_text())
    options = json.loads(pathlib.Path(out["options_file"]).read_text())
    # shapes, the graph's constants and the fixture's options agree
    assert options["lstm"] == {**fixture["lstm"], "cell_clip": 3.0,
                               "proj_clip": 3.0}
    assert options["char_cnn"] == fixture["char_cnn"]
    family = "deeppavlov" if name == "deeppavlov" else "google"
    mix = read_mix(tmp_path / "out" / MIX_FILE)
    logits, gamma = MIXES[family]
    np.testing.assert_allclose(mix.mix_logits, logits, rtol=1e-7)
    assert mix.gamma == pytest.approx(gamma, rel=1e-7)
    assert module.family == family


def test_skip_connections_and_clips_come_from_the_graph():
    options = read_tfhub_module(MODULES / "google_skip").options
    assert options["lstm"]["use_skip_connections"] is True
    assert options["lstm"]["cell_clip"] == 2.0
    assert options["lstm"]["proj_clip"] == 2.5


# --- bad modules -----------------------------------------------------------
def _tensors(name="google") -> dict:
    reader = tf.train.load_checkpoint(str(MODULES / name / "variables"
                                          / "variables"))
    return {n: reader.get_tensor(n)
            for n in reader.get_variable_to_shape_map()}


def _module_with(tmp_path, tensors, name="google") -> pathlib.Path:
    """A copy of fixture module ``name`` whose checkpoint holds
    ``tensors`` (written by TensorFlow's own SaveV2)."""
    out = tmp_path / name
    shutil.copytree(MODULES / name, out)
    shutil.rmtree(out / "variables")
    (out / "variables").mkdir()
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(out / "variables" / "variables"),
                      tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])
    return out


def _refused(tmp_path, path, match, **kwargs):
    outdir = tmp_path / "out"
    with pytest.raises(TFHubModuleError, match=match) as e:
        write_converted(read_tfhub_module(path, **kwargs), outdir)
    assert "\n" not in str(e.value)
    assert not outdir.exists()
    return str(e.value)


def test_a_tf2_savedmodel_is_refused(tmp_path):
    saved = tmp_path / "tf2"
    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0])
    tf.saved_model.save(module, str(saved))
    _refused(tmp_path, saved, r"tf2: expected a TF1 Hub module, found a TF2 "
                              r"SavedModel \(an object graph")


def test_an_index_without_its_data_file_is_refused(tmp_path):
    module = tmp_path / "google"
    shutil.copytree(MODULES / "google", module)
    (module / "variables" / "variables.data-00000-of-00002").unlink()
    _refused(tmp_path, module, r"variables/variables.data-00000-of-00002: "
                               r"missing \(the checkpoint's values")


def test_a_module_without_a_weight_we_need_is_refused(tmp_path):
    tensors = _tensors()
    del tensors["bilm/CNN_high_1/b_carry"]
    _refused(tmp_path, _module_with(tmp_path, tensors),
             r"bilm/CNN_high_1/b_carry: options give "
             r"shape \(124,\), checkpoint has none$")


def test_a_module_without_the_bilm_is_refused(tmp_path):
    tensors = {n: v for n, v in _tensors().items()
               if not n.startswith("bilm/RNN")}
    _refused(tmp_path, _module_with(tmp_path, tensors),
             r"expected bilm-tf's biLM under bilm/ .* found 39 variable")


def test_an_unknown_variable_is_named(tmp_path):
    tensors = _tensors()
    tensors["bilm/CNN_high_0/W_gate"] = np.zeros((124, 124), np.float32)
    # not weights: skipped
    tensors["global_step"] = np.int64(3)
    tensors["bilm/CNN/W_cnn_0/Adagrad"] = np.ones((1, 1, 4, 4), np.float32)
    _refused(tmp_path, _module_with(tmp_path, tensors),
             r"do not fit one bilm-tf biLM: bilm/CNN_high_0/W_gate: "
             r"in the checkpoint \(124, 124\), not in the model the "
             r"options describe$")


def test_a_shape_that_contradicts_the_inferred_options_is_refused(tmp_path):
    tensors = _tensors()
    tensors["bilm/CNN_high_1/W_transform"] = np.zeros((124, 120), np.float32)
    _refused(tmp_path, _module_with(tmp_path, tensors),
             r"bilm/CNN_high_1/W_transform: options give shape "
             r"\(124, 124\), checkpoint has \(124, 120\)")


def test_an_options_file_that_contradicts_the_shapes_is_refused(tmp_path):
    options = json.loads((MODEL / "options.json").read_text())
    options["lstm"]["dim"] = 128
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    _refused(tmp_path, MODULES / "google",
             r"options.json does not fit the module .*google: lstm.dim: the "
             r"variables give 64, .*options.json has 128$",
             options_file=path)


def test_an_options_file_that_contradicts_the_graph_is_refused(tmp_path):
    options = json.loads((MODEL / "options.json").read_text())
    options["lstm"]["use_skip_connections"] = True
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    _refused(tmp_path, MODULES / "google",
             r"lstm.use_skip_connections: the graph has False, "
             r".*options.json has True$", options_file=path)


def test_a_graph_that_says_nothing_needs_an_options_file(tmp_path):
    module = tmp_path / "google"
    shutil.copytree(MODULES / "google", module)
    (module / "saved_model.pb").write_bytes(b"not a protocol buffer")
    _refused(tmp_path, module,
             r"graph does not say cell_clip, proj_clip, use_skip_connections,"
             r" max_characters_per_token, activation; pass an options file")
    # given one, the clips and the rest come from it
    got = read_tfhub_module(module, options_file=MODEL / "options.json")
    fixture = json.loads((MODEL / "options.json").read_text())
    assert got.options["lstm"] == fixture["lstm"]
    assert got.options["char_cnn"] == fixture["char_cnn"]


def test_a_mix_of_the_wrong_size_is_refused(tmp_path):
    tensors = _tensors()
    tensors["aggregation/weights"] = np.zeros(4, np.float32)
    _refused(tmp_path, _module_with(tmp_path, tensors),
             r"the learned mix does not fit: aggregation/weights: expected "
             r"shape \(3,\), found \[4\]$")


def test_a_tf1_module_given_as_our_savedmodel_is_refused():
    # the reverse: ELMoHubLayer loads export_hub's TF2 SavedModels, and
    # refuses a TF1 module before loading (which would run its graph)
    from bilm_keras.export.elmo_hub_layer import ELMoHubLayer

    with pytest.raises(ValueError, match=r"google: expected a SavedModel "
                                         r"from export_hub, found a TF1 Hub "
                                         r"module \(tfhub_module.pb\); "
                                         r"convert it with") as e:
        ELMoHubLayer(MODULES / "google")
    assert "\n" not in str(e.value)
