"""Weight files, read: bilm-tf's HDF5 layout and TF1 checkpoints, and every
foreign family's files (ELMoForManyLangs, Paddle, a TF1 Hub module)
converted to it. What wrote a path's files is told once, for every family,
by :mod:`.model_detection` (:func:`~.model_detection.detect_model`).

The converters live together, each a family's reader composed with the
folder every converter writes (:mod:`.model_folder`):
:mod:`.manylangs_conversion` (``convert-manylangs``),
:mod:`.paddle_conversion` (``convert-paddle``) and
:mod:`.tfhub_conversion` (``convert-tfhub``, a TF1 Hub module read by
:mod:`.tfhub_module`). Writing our own models out is :mod:`bilm_keras.export`'s.

The names below are imported on first use (PEP 562), so that converting an
ELMoForManyLangs model (``weights.manylangs_pkl``) does not import
TensorFlow.
"""

from bilm_keras._utils.lazy import lazy_exports as _lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "WeightFileError": "bilm_keras.weights.bilm_tf_hdf5",
    "load_bilm_tf_hdf5": "bilm_keras.weights.bilm_tf_hdf5",
    "save_bilm_tf_hdf5": "bilm_keras.weights.bilm_tf_hdf5",
    "weight_table": "bilm_keras.weights.bilm_tf_hdf5",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
