"""Reading bilm-tf's TF1 checkpoints, checked against what bilm-tf's own code
wrote (``tests/fixtures/bilm_tf_run``: its ``train()`` checkpoint in both
name generations and its ``dump_weights`` file)."""

import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.options import BiLMOptions
from bilm_keras.training.bilm_tf_restart import (
    bilm_tf_run_options,
    restore_bilm_tf_run,
)
from bilm_keras.save_dirs.bilm_tf_run import (
    dump_bilm_tf_checkpoint,
    load_bilm_tf_language_model,
)
from bilm_keras.weights import load_bilm_tf_hdf5
from bilm_keras.training.model_setup import build_model
from bilm_keras.training.run_checkpoint import RunCheckpoint
from bilm_keras.weights.bilm_tf_checkpoint import read_bilm_tf_checkpoint
from bilm_keras.weights.bilm_tf_names import TF_1_2, TF_1_5, checkpoint_name
from bilm_keras.weights.model_detection import (
    OUR_RUN,
    TF1_CHECKPOINT,
    CheckpointFileError,
    locate_checkpoint,
)
from helpers import bilm_tf_state, hdf5_datasets

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"
GENERATIONS = {"save_dir": TF_1_5, "save_dir_tf12": TF_1_2}



def _raw(save_dir):
    """Every tensor of a checkpoint, read with TensorFlow alone."""
    reader = tf.train.load_checkpoint(str(save_dir / "model.ckpt-40"))
    return {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}


@pytest.fixture(scope="module")
def bilm_tf_dump():
    return hdf5_datasets(RUN / "lm_weights.hdf5")


@pytest.mark.parametrize("sub", sorted(GENERATIONS))
def test_dump_datasets_name_every_lm_weight(sub, bilm_tf_dump):
    # the renaming undone: each of bilm-tf's dataset names leads to a
    # checkpoint tensor with the dataset's value, and every lm/ weight but
    # the softmax is reached
    raw = _raw(RUN / sub)
    names = {checkpoint_name(d, GENERATIONS[sub]): d for d in bilm_tf_dump}
    for name, dataset in names.items():
        assert np.array_equal(raw[name], bilm_tf_dump[dataset]), name
        assert raw[name + "/Adagrad"].shape == raw[name].shape
    weights = {n for n in raw if n.startswith("lm/")
               and not n.endswith("/Adagrad")
               and not n.startswith("lm/softmax/")}
    assert set(names) == weights


def test_checkpoint_name_examples():
    lstm = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell"
    assert checkpoint_name(f"{lstm}/W_0", TF_1_5) == (
        "lm/RNN_1/rnn/multi_rnn_cell/cell_1/lstm_cell/kernel")
    assert checkpoint_name(f"{lstm}/B", TF_1_5) == (
        "lm/RNN_1/rnn/multi_rnn_cell/cell_1/lstm_cell/bias")
    assert checkpoint_name(f"{lstm}/W_P_0", TF_1_5) == (
        "lm/RNN_1/rnn/multi_rnn_cell/cell_1/lstm_cell/projection/kernel")
    assert checkpoint_name(f"{lstm}/W_P_0", TF_1_2) == f"lm/{lstm}/W_P_0"
    for generation in GENERATIONS.values():
        assert checkpoint_name("char_embed", generation) == "lm/char_embed"
        assert checkpoint_name("CNN_high_1/b_carry", generation) == (
            "lm/CNN_high_1/b_carry")


@pytest.mark.parametrize("sub", sorted(GENERATIONS))
def test_locate_falls_back_to_the_save_dir(sub):
    state = (RUN / sub / "checkpoint").read_text()
    # bilm-tf's state file names the machine that trained it
    assert '"/home/elmo/runs/bilm_tf_run/model.ckpt-40"' in state
    found = locate_checkpoint(RUN / sub)
    assert found.path == str(RUN / sub / "model.ckpt-40")
    assert (found.kind, found.generation) == (TF1_CHECKPOINT, GENERATIONS[sub])
    assert found.global_step == 40


def test_locate_without_a_state_file(tmp_path):
    save_dir = tmp_path / "run"
    shutil.copytree(RUN / "save_dir", save_dir)
    (save_dir / "checkpoint").unlink()
    assert locate_checkpoint(save_dir).path == str(save_dir / "model.ckpt-40")


@pytest.mark.parametrize("sub", sorted(GENERATIONS))
def test_dump_is_bilm_tfs_bit_for_bit(sub, bilm_tf_dump, tmp_path):
    out = tmp_path / "out" / "lm_weights.hdf5"
    result = _dump(RUN / sub, out)
    assert result["generation"] == GENERATIONS[sub]
    ours = hdf5_datasets(out)
    assert sorted(ours) == sorted(bilm_tf_dump)
    for name, value in bilm_tf_dump.items():
        assert ours[name].dtype == np.float32
        assert np.array_equal(ours[name], value), name
    assert sorted(p.name for p in out.parent.iterdir()) == ["lm_weights.hdf5"]


@pytest.fixture(scope="module")
def loaded():
    """Both generations as language models, with the checkpoint read."""
    return {sub: load_bilm_tf_language_model(RUN / sub,
                                             locate_checkpoint(RUN / sub))
            for sub in GENERATIONS}


def _expected_layout(checkpoint_name, value):
    """Our variable's value of a checkpoint tensor, by the layout rules."""
    if checkpoint_name.startswith("lm/char_embed"):  # + the padding row
        return np.concatenate([np.zeros((1, value.shape[1])), value])
    if checkpoint_name.startswith("lm/CNN/W_cnn_"):  # conv2d (1, w, in, out)
        return value[0]
    if "lstm_cell/kernel" in checkpoint_name or "/W_0" in checkpoint_name:
        return value.T  # the cells hold the transposed kernels
    if ("lstm_cell/projection/kernel" in checkpoint_name
            or "/W_P_0" in checkpoint_name):
        return value.T
    return value


@pytest.mark.parametrize("sub", sorted(GENERATIONS))
def test_weights_and_accumulators_in_our_layout(sub, loaded):
    _, lm, checkpoint = loaded[sub]
    raw = _raw(RUN / sub)
    entries = {e.variable_path: e for e in checkpoint.variables}
    # every variable of the model, softmax included, is filled
    assert sorted(entries) == sorted(v.path for v in lm.variables)
    assert checkpoint.has_accumulators
    _, accumulators = bilm_tf_state(checkpoint)
    for variable in lm.variables:
        name = entries[variable.path].checkpoint_name
        expected = _expected_layout(name, raw[name])
        assert np.array_equal(variable.numpy(), expected), name
        accumulator = _expected_layout(name, raw[name + "/Adagrad"])
        if name == "lm/char_embed":  # bilm-tf's initial 1.0 for row 0
            accumulator[0] = 1.0
        assert np.array_equal(accumulators[variable.path], accumulator), name
    assert checkpoint.global_step == 40


def test_both_generations_give_the_same_model(loaded):
    (_, a, _), (_, b, _) = loaded["save_dir"], loaded["save_dir_tf12"]
    for va, vb in zip(a.variables, b.variables):
        assert va.path == vb.path
        assert np.array_equal(va.numpy(), vb.numpy()), va.path


def test_backbone_equals_the_bilm_tf_dump_loaded(loaded):
    # the HDF5 loader (its own, tested path) reading bilm-tf's dump gives
    # the backbone the checkpoint reader gave
    options = BiLMOptions.from_json(RUN / "save_dir" / "options.json")
    backbone = BiLMBackbone.from_options(options, name="bilm")
    load_bilm_tf_hdf5(backbone, RUN / "lm_weights.hdf5", strict=True)
    _, lm, _ = loaded["save_dir"]
    ours = {v.path.split("/", 1)[1]: v.numpy() for v in lm.backbone.variables}
    for v in backbone.variables:
        assert np.array_equal(ours[v.path], v.numpy()), v.path


def _dump(save_dir, out):
    """What ``dump-weights`` does with a save_dir: its newest checkpoint
    found once, refused when newer damaged ones were passed over, then
    dumped."""
    found = locate_checkpoint(save_dir)
    found.require_latest(save_dir)
    return dump_bilm_tf_checkpoint(save_dir, found, out)


# -- bad input: one line, the file and what is wrong, nothing written ------

def _copy(tmp_path, sub="save_dir"):
    save_dir = tmp_path / sub
    shutil.copytree(RUN / sub, save_dir)
    return save_dir


def _dump_fails(save_dir, tmp_path, match):
    out = tmp_path / "dump" / "lm_weights.hdf5"
    with pytest.raises(CheckpointFileError, match=match) as info:
        _dump(save_dir, out)
    assert "\n" not in str(info.value)
    assert not out.exists()
    assert not out.parent.exists() or not list(out.parent.iterdir())
    return str(info.value)


def test_options_that_do_not_fit(tmp_path):
    save_dir = _copy(tmp_path)
    options = json.loads((save_dir / "options.json").read_text())
    options["lstm"]["dim"] = 64
    (save_dir / "options.json").write_text(json.dumps(options))
    message = _dump_fails(
        save_dir, tmp_path,
        r"options\.json does not fit bilm-tf checkpoint .*model\.ckpt-40: "
        r"lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel: options give "
        r"shape \(32, 256\), checkpoint has \(32, 128\)")
    # refused before the model is built, naming the option that asks
    assert message.endswith("(lstm.dim 64 and n_layers 2)")


def test_options_with_fewer_layers_than_the_checkpoint(tmp_path):
    save_dir = _copy(tmp_path, "save_dir_tf12")
    options = json.loads((save_dir / "options.json").read_text())
    options["char_cnn"]["n_highway"] = 1
    (save_dir / "options.json").write_text(json.dumps(options))
    _dump_fails(save_dir, tmp_path,
                r"lm/CNN_high_1/W_carry: in the checkpoint \(48, 48\), not "
                r"in the model the options describe")


def test_missing_data_file(tmp_path):
    save_dir = _copy(tmp_path)
    (save_dir / "model.ckpt-40.data-00000-of-00001").unlink()
    _dump_fails(save_dir, tmp_path,
                r"save_dir: no checkpoint reads whole \(model\.ckpt-40\."
                r"data-00000-of-00001: missing \(the checkpoint's values; "
                r"model\.ckpt-40\.index is there without them\)\)")


def test_no_checkpoint(tmp_path):
    save_dir = tmp_path / "empty"
    save_dir.mkdir()
    shutil.copy(RUN / "save_dir" / "options.json", save_dir)
    _dump_fails(save_dir, tmp_path, r"empty: no checkpoint found \(expected")


def test_state_file_naming_a_checkpoint_that_is_nowhere(tmp_path):
    # the state file names model.ckpt-40; only model.ckpt-39 is there: a
    # reader passes over 40 and says so, a dump refuses to pass it over
    save_dir = _copy(tmp_path)
    for path in save_dir.glob("model.ckpt-40.*"):
        path.rename(save_dir / path.name.replace("-40.", "-39."))
    found = locate_checkpoint(save_dir)
    assert found.path == str(save_dir / "model.ckpt-39")
    assert found.damaged == ((str(save_dir / "model.ckpt-40"),
                              "model.ckpt-40.index: missing"),)
    assert found.fallback_note() == (
        "WARNING: the latest checkpoint does not read whole "
        "(model.ckpt-40.index: missing); using model.ckpt-39, the newest "
        "that does")
    _dump_fails(save_dir, tmp_path,
                r"save_dir: the latest checkpoint model\.ckpt-40 does not "
                r"read whole \(model\.ckpt-40\.index: missing\); the newest "
                r"that does is model\.ckpt-39: name it to use it "
                r"\(--checkpoint model\.ckpt-39\)")
    out = tmp_path / "named" / "lm_weights.hdf5"
    dump_bilm_tf_checkpoint(
        save_dir, locate_checkpoint(save_dir, checkpoint="model.ckpt-39"),
        out)
    assert out.exists()


def test_neither_ours_nor_bilm_tfs(tmp_path):
    save_dir = tmp_path / "other"
    tf.train.Checkpoint(encoder=tf.Variable([1.0]),
                        decoder=tf.Variable([2.0])).write(
        str(save_dir / "model.ckpt-1"))
    shutil.copy(RUN / "save_dir" / "options.json", save_dir)
    _dump_fails(save_dir, tmp_path,
                r"model\.ckpt-1: neither a bilm_keras nor a bilm-tf "
                r"checkpoint \(expected .*found \d+ variable\(s\): "
                r".*decoder/\.ATTRIBUTES/VARIABLE_VALUE")


def test_ours_is_told_apart(tmp_path):
    save_dir = tmp_path / "ours"
    tf.train.Checkpoint(weights={"language_model:bilm:x": tf.Variable(
        [1.0])}).write(str(save_dir / "ckpt-1"))
    assert locate_checkpoint(save_dir).kind == OUR_RUN
    options = BiLMOptions.from_json(RUN / "save_dir" / "options.json")
    backbone = BiLMBackbone.from_options(options, name="bilm")
    with placeholder_weights():
        backbone.build_all()
    with pytest.raises(CheckpointFileError,
                       match=r"ckpt-1: a bilm_keras checkpoint, not "
                             r"bilm-tf's"):
        read_bilm_tf_checkpoint(locate_checkpoint(save_dir), backbone,
                                options_file="the options")


def test_a_checkpoint_without_optimizer_slots(tmp_path):
    # the weights alone (as a user who pruned the slots would keep them)
    save_dir = tmp_path / "pruned"
    save_dir.mkdir()
    shutil.copy(RUN / "save_dir" / "options.json", save_dir)
    raw = {n: v for n, v in _raw(RUN / "save_dir").items()
           if not n.endswith("/Adagrad")}
    tf.raw_ops.SaveV2(prefix=str(save_dir / "model.ckpt-40"),
                      tensor_names=list(raw), shape_and_slices=[""] * len(raw),
                      tensors=list(raw.values()))
    _, lm, checkpoint = load_bilm_tf_language_model(
        save_dir, locate_checkpoint(save_dir))
    assert not checkpoint.has_accumulators
    assert checkpoint.global_step == 40
    assert np.array_equal(lm.softmax.b.numpy(), raw["lm/softmax/b"])
    # a run cannot continue from it: the accumulators named
    options = bilm_tf_run_options(save_dir)
    with placeholder_weights():
        lm, optimizer = build_model(options)
    with pytest.raises(CheckpointFileError,
                       match=r"holds no Adagrad accumulators \(expected "
                             r"'lm/char_embed/Adagrad'\): restart "):
        restore_bilm_tf_run(
            locate_checkpoint(save_dir),
            RunCheckpoint(lm, optimizer, batch_size=options.batch_size),
            save_dir=save_dir)


def test_read_a_tensor_by_name(loaded):
    _, _, checkpoint = loaded["save_dir_tf12"]
    raw = _raw(RUN / "save_dir_tf12")
    assert np.array_equal(checkpoint.read_tensor("lm/softmax/W/Adagrad"),
                          raw["lm/softmax/W/Adagrad"])
    with pytest.raises(CheckpointFileError,
                       match=r"model\.ckpt-40: cannot read lm/nothing"):
        checkpoint.read_tensor("lm/nothing")


def test_a_damaged_latest_checkpoint_is_passed_over(tmp_path):
    # bilm-tf kept its two newest checkpoints; the newest cut short
    save_dir = _copy(tmp_path)
    for path in save_dir.glob("model.ckpt-40.*"):
        shutil.copy(path, save_dir / path.name.replace("-40.", "-30."))
    data = save_dir / "model.ckpt-40.data-00000-of-00001"
    size = data.stat().st_size
    with open(data, "r+b") as f:
        f.truncate(size // 2)
    problem = (f"model.ckpt-40.data-00000-of-00001: cut short "
               f"({size // 2} of {size} bytes)")
    found = locate_checkpoint(save_dir)
    assert (found.path, found.kind) == (str(save_dir / "model.ckpt-30"),
                                        TF1_CHECKPOINT)
    assert found.damaged == ((str(save_dir / "model.ckpt-40"), problem),)
    with pytest.raises(CheckpointFileError) as info:
        found.require_latest(str(save_dir))
    assert str(info.value) == (
        f"{save_dir}: the latest checkpoint model.ckpt-40 does not read "
        f"whole ({problem}); the newest that does is model.ckpt-30: name it "
        "to use it (--checkpoint model.ckpt-30)")
    # named: used as it is, or refused when it is the damaged one
    assert locate_checkpoint(save_dir,
                             checkpoint="model.ckpt-30").damaged == ()
    with pytest.raises(CheckpointFileError) as info:
        locate_checkpoint(save_dir, checkpoint="model.ckpt-40")
    assert str(info.value) == (
        f"{save_dir / 'model.ckpt-40'}: the checkpoint does not read whole "
        f"({problem})")
