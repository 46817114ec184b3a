"""A trained run's save_dir read back, whoever wrote it: ours, bilm-tf's
(DeepPavlov's among them) or Paddle's, as an inference model or as
bilm-tf's HDF5 weights. Below the facade, so that
:meth:`~bilm_keras.BidirectionalLanguageModel.from_pretrained` reads a
save_dir of ours as ``dump-weights`` writes it.

* :mod:`.save_dir_models`: the reader of a run's family, as
  :mod:`bilm_keras.weights.model_detection` told it: the one place that
  branches on it (:func:`load_save_dir_model`).
* :mod:`.our_run`: our training's checkpoint, its weights restored
  (:func:`load_trained_model`).
* :mod:`.bilm_tf_run`: bilm-tf's, read whole, its backbone or its
  softmax alone for a new run, or dumped as bilm-tf dumped it.
* :mod:`.paddle_run`: a Paddle checkpoint, Fluid's or PaddleNLP's.
* :mod:`.weight_dump`: ``dump-weights`` (:func:`dump_weights`), and
  :mod:`.options_file`, the ``options.json`` it writes beside.

The names below are imported on first use (PEP 562).
"""

from bilm_keras._utils.lazy import lazy_exports as _lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "CheckpointError": "bilm_keras.save_dirs.our_run",
    "dump_weights": "bilm_keras.save_dirs.weight_dump",
    "load_save_dir_model": "bilm_keras.save_dirs.save_dir_models",
    "load_trained_model": "bilm_keras.save_dirs.our_run",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
