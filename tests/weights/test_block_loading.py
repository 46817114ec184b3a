"""Loading bilm-tf HDF5 weights a block of rows at a time, into variables
built with placeholder zeros: every variable must end up equal to its
dataset (read here with h5py and numpy alone) and read without copies."""

import ctypes

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import BiLMBackbone, BiLMOptions
from bilm_keras.layers import LSTMCellWithProjection
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.weights import bilm_tf_hdf5, load_bilm_tf_hdf5


def _buffer_address(tensor) -> int:
    """The address of ``tensor``'s buffer, from its DLPack capsule (a
    ``DLManagedTensor``, whose first field is its data pointer): numpy's
    view is no probe, numpy copies a buffer another tensor shares."""
    capsule = tf.experimental.dlpack.to_dlpack(tensor)
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = (ctypes.c_void_p,
                                                 [ctypes.py_object,
                                                  ctypes.c_char_p])
    managed = get_pointer(capsule, b"dltensor")
    return ctypes.c_void_p.from_address(managed).value


def _expected(fin, hdf5_path):
    """The Keras value of a dataset, worked out from the layout rules."""
    value = fin[hdf5_path][...]
    if hdf5_path == "char_embed":  # padding row 0 for the +1-shifted ids
        return np.concatenate([np.zeros((1, value.shape[1])), value])
    if hdf5_path.startswith("CNN/W_cnn_"):  # conv2d (1, w, in, out)
        return value[0]
    if hdf5_path.endswith(("/W_0", "/W_P_0")):  # the cells hold transposes
        return value.T
    return value


@pytest.mark.parametrize("block_bytes", [4096, 64 << 20])
def test_every_variable_equals_its_dataset(model_dir, monkeypatch,
                                           block_bytes):
    # 4096 bytes: the LSTM kernels (and char_embed, 64 bytes a row) load in
    # many blocks, the last one short; 64 MB: each dataset in one block
    monkeypatch.setattr(bilm_tf_hdf5, "LOAD_BLOCK_BYTES", block_bytes)
    options = BiLMOptions.from_json(model_dir / "options.json")
    backbone = BiLMBackbone.from_options(options, name="bilm")
    assert not backbone.built
    load_bilm_tf_hdf5(backbone, model_dir / "lm_weights.hdf5")
    rows = bilm_tf_hdf5.weight_table(backbone)
    assert {id(r.variable) for r in rows} == {id(v) for v in
                                              backbone.weights}
    with h5py.File(model_dir / "lm_weights.hdf5", "r") as fin:
        for row in rows:
            np.testing.assert_array_equal(
                row.variable.numpy(), _expected(fin, row.hdf5_path),
                err_msg=row.hdf5_path)
    # a sliced assignment leaves a variable copying itself on every read
    # unless the loader turns that off (what costs memory: the large ones)
    large = [row.variable for row in rows
             if row.keras_row_offset is not None
             and row.variable.numpy().nbytes >= 16384]
    assert len(large) >= 4
    for variable in large:
        # two reads alive at once share the variable's buffer, unless the
        # variable is in copy-on-read mode (each read a copy of its own)
        first, second = (variable.value.read_value(),
                         variable.value.read_value())
        assert _buffer_address(first) == _buffer_address(second), (
            f"{variable.path} copies itself on every read")


def test_placeholder_weights_are_zeros_only_inside_the_context():
    with placeholder_weights():
        inside = LSTMCellWithProjection(8, 4)
        inside.build((None, 3))
    outside = LSTMCellWithProjection(8, 4)
    outside.build((None, 3))
    assert not np.any(inside.kernel_t.numpy())
    assert not np.any(inside.projection_kernel_t.numpy())
    assert np.any(outside.kernel_t.numpy())
    assert np.any(outside.projection_kernel_t.numpy())


def test_built_backbone_keeps_its_variables(model_dir):
    options = BiLMOptions.from_json(model_dir / "options.json")
    keras.utils.set_random_seed(3)
    backbone = BiLMBackbone.from_options(options, name="bilm").build_all()
    before = [id(v) for v in backbone.weights]
    load_bilm_tf_hdf5(backbone, model_dir / "lm_weights.hdf5")
    assert [id(v) for v in backbone.weights] == before
    with h5py.File(model_dir / "lm_weights.hdf5", "r") as fin:
        kernel = fin["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"][...]
    cell = backbone.stacks["forward"].cells[0]
    np.testing.assert_array_equal(cell.kernel.numpy(), kernel)
    assert tf.reduce_all(tf.equal(cell.kernel_t.value, kernel.T))
