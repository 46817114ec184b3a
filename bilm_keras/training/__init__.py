"""Training: the loop, its checkpoints and evaluation.

The package's modules, by job:

* :mod:`.loop`: :func:`train` and :func:`restart`.
* :mod:`.training_run`: :class:`TrainingRun`, the settings of a run.
* :mod:`.inputs`: vocabulary, batches, steps per epoch.
* :mod:`.model_setup`: the model and its Adagrad (:mod:`.adagrad`).
* :mod:`.train_step`: one distributed training step.
* :mod:`.reporting`: progress lines and TensorBoard scalars.
* :mod:`.run_checkpoint`: :class:`RunCheckpoint`, what a checkpoint
  holds (weights, Adagrad, step, data stream, carried states, warm-up),
  built once, saved, restored, and continued from a foreign run's values
  (:class:`ForeignRun`).
* :mod:`.checkpoints`: what a ``save_dir`` holds, checkpoints written
  whole, the data stream.
* :mod:`.carried_states`: the LSTM states a step hands the next.
* :mod:`.lm_warmup`: the adapted run's softmax-only first steps.
* :mod:`.preemption`: SIGTERM / SIGINT end a run with a checkpoint.
* :mod:`.bilm_tf_restart`: a save_dir of bilm-tf's own training,
  continued by :func:`restart` (a new run starts from one through
  :mod:`bilm_keras.save_dirs.bilm_tf_run`).
* :mod:`.evaluation`: heldout perplexity.
* :mod:`.stateful_evaluation`: bilm-tf's ``run_test.py`` perplexity.
* :mod:`.adaptation`: continuing a published biLM on new text.
* :mod:`.strategy`: the ``tf.distribute`` strategy.
* :mod:`.threads`: TensorFlow's CPU thread pools for training.
* :mod:`.pipeline`: vocabulary to embeddings in one call.

A trained run is read back, and dumped, by :mod:`bilm_keras.save_dirs`.

The names below are imported on first use (PEP 562): importing the
package (``bilm-keras train --help``) does not import TensorFlow. The
command-line flags live in :mod:`bilm_keras.cli`.
"""

from bilm_keras._utils.lazy import lazy_exports as _lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "CheckpointError": "bilm_keras.save_dirs.our_run",
    "TrainingPreempted": "bilm_keras.training.preemption",
    "TrainingRun": "bilm_keras.training.training_run",
    "evaluate": "bilm_keras.training.evaluation",
    "evaluate_stateful": "bilm_keras.training.stateful_evaluation",
    "make_strategy": "bilm_keras.training.strategy",
    "restart": "bilm_keras.training.loop",
    "train": "bilm_keras.training.loop",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
