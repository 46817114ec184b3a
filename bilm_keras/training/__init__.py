"""Training: strategy, custom loop, evaluation and HDF5 dump (issue 3)."""

from bilm_keras.training.dump import dump_weights
from bilm_keras.training.loop import (
    CheckpointError,
    evaluate,
    load_trained_model,
    restart,
    train,
)
from bilm_keras.training.strategy import make_strategy

__all__ = [
    "CheckpointError",
    "dump_weights",
    "evaluate",
    "load_trained_model",
    "make_strategy",
    "restart",
    "train",
]
