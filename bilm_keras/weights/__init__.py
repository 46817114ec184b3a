"""Weight files: bilm-tf's HDF5 layout."""

from bilm_keras.weights.bilm_tf_hdf5 import (
    WeightFileError,
    load_bilm_tf_hdf5,
    save_bilm_tf_hdf5,
    weight_table,
)

__all__ = [
    "WeightFileError",
    "load_bilm_tf_hdf5",
    "save_bilm_tf_hdf5",
    "weight_table",
]
