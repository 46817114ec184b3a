"""Training: strategy, custom loop, evaluation and HDF5 dump (issue 3).

The names below are imported on first use (PEP 562): the command-line
flags in :mod:`bilm_keras.training.cli` must not import TensorFlow.
"""

from bilm_keras._lazy import lazy_exports as _lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "CheckpointError": "bilm_keras.training.loop",
    "dump_weights": "bilm_keras.training.dump",
    "evaluate": "bilm_keras.training.loop",
    "load_trained_model": "bilm_keras.training.loop",
    "make_strategy": "bilm_keras.training.strategy",
    "restart": "bilm_keras.training.loop",
    "train": "bilm_keras.training.loop",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
