"""``RunCheckpoint``: a foreign run's values, handed over as plain numpy
arrays in bilm-tf's layout (what the Paddle readers do), continue the run
exactly as bilm-tf's own TF1 checkpoint does; a value of the wrong shape
is named before anything is assigned."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf
from helpers import hdf5_datasets

from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.training.bilm_tf_restart import (
    bilm_tf_run_options,
    restore_bilm_tf_run,
)
from bilm_keras.save_dirs.our_run import CheckpointError
from bilm_keras.training.model_setup import build_model
from bilm_keras.training.run_checkpoint import (
    PARTS,
    SOFTMAX_B_KEY,
    SOFTMAX_W_KEY,
    ForeignRun,
    RunCheckpoint,
)
from bilm_keras.weights.bilm_tf_names import TF_1_5, checkpoint_name
from bilm_keras.weights.model_detection import locate_checkpoint

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"


def _run_checkpoint(options):
    with placeholder_weights():
        lm, optimizer = build_model(options)
    return RunCheckpoint(lm, optimizer, batch_size=options.batch_size)


def _numpy_run(save_dir):
    """bilm-tf's run as arrays: the weights from bilm-tf's own dump
    (``lm_weights.hdf5``, by dataset path), the softmax and every Adagrad
    accumulator from the checkpoint's tensors, the step."""
    reader = tf.train.load_checkpoint(str(save_dir / "model.ckpt-40"))
    weights = hdf5_datasets(RUN / "lm_weights.hdf5")
    accumulators = {key: reader.get_tensor(checkpoint_name(key, TF_1_5)
                                           + "/Adagrad")
                    for key in weights}
    for key in (SOFTMAX_W_KEY, SOFTMAX_B_KEY):
        accumulators[key] = reader.get_tensor(f"lm/{key}/Adagrad")
    return ForeignRun(
        source="paddle-like", weights=weights,
        softmax_weights=reader.get_tensor("lm/softmax/W"),
        softmax_bias=reader.get_tensor("lm/softmax/b"),
        accumulators=accumulators,
        step=int(round(float(reader.get_tensor("global_step")))))


def _state(saved):
    optimizer = saved.optimizer
    return ({v.path: (v.numpy(), optimizer.accumulator(v).numpy())
             for v in saved.lm.trainable_variables},
            int(optimizer.iterations.numpy()))


def test_numpy_values_continue_the_run_as_the_tf1_reader_does():
    save_dir = RUN / "save_dir"
    options = bilm_tf_run_options(save_dir)
    from_tf1 = _run_checkpoint(options)
    step = restore_bilm_tf_run(locate_checkpoint(save_dir), from_tf1,
                               save_dir=save_dir)
    from_numpy = _run_checkpoint(options)
    assert from_numpy.continue_foreign(_numpy_run(save_dir)) == step == 40
    want, got = _state(from_tf1), _state(from_numpy)
    assert want[1] == got[1] == 40
    assert sorted(got[0]) == sorted(want[0])
    for path, (weight, accumulator) in want[0].items():
        np.testing.assert_array_equal(got[0][path][0], weight, path)
        np.testing.assert_array_equal(got[0][path][1], accumulator, path)
    # what a checkpoint of the run holds, by name, once
    names = {name.split("/")[0] for name in
             from_numpy.checkpoint._trackable_children()}
    assert set(PARTS) <= names


def test_a_value_of_another_shape_is_named_and_nothing_assigned():
    save_dir = RUN / "save_dir"
    options = bilm_tf_run_options(save_dir)
    saved = _run_checkpoint(options)
    run = _numpy_run(save_dir)
    weights = dict(run.weights)
    weights["CNN/W_cnn_0"] = weights["CNN/W_cnn_0"][..., :-1]
    weights["extra"] = np.zeros(3, np.float32)
    before = [v.numpy() for v in saved.lm.variables]
    bad = ForeignRun(run.source, weights, run.softmax_weights,
                     run.softmax_bias, None, run.step)
    with pytest.raises(CheckpointError) as error:
        saved.continue_foreign(bad)
    message = str(error.value)
    assert message.startswith("paddle-like does not fit the model: ")
    shape = run.weights["CNN/W_cnn_0"].shape
    assert (f"CNN/W_cnn_0: options give shape {shape}, checkpoint has "
            f"{shape[:-1] + (shape[-1] - 1,)}") in message
    assert ("extra: in the checkpoint (3,), not in the model the options "
            "describe") in message
    assert "no Adagrad accumulators" in message
    for was, variable in zip(before, saved.lm.variables):
        np.testing.assert_array_equal(variable.numpy(), was)
    assert int(saved.optimizer.iterations.numpy()) == 0
