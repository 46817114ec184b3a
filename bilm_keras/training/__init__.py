"""Training: strategy, custom loop, evaluation and HDF5 dump (issue 3).

The names below are imported on first use (PEP 562): the command-line
flags in :mod:`bilm_keras.training.cli` must not import TensorFlow.
"""

import importlib as _importlib

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


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(
            f"module 'bilm_keras.training' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
