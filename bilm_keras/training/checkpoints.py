"""What a ``save_dir`` holds and how it is read back.

A training ``save_dir`` holds ``options.json`` (the resolved options),
``training_data.json`` (the training corpus's token and sentence counts
and unigram perplexity), the checkpoints and ``logs/`` (TensorBoard). A
checkpoint holds every variable of the :class:`LanguageModel` by its Keras
path (:func:`model_checkpoint`), the optimizer with its step counter, the
data stream (:class:`DataStream`) and the warm-up's end
(:class:`~bilm_keras.training.adaptation.LMWarmup`).
"""

from __future__ import annotations

import os
import random
from typing import Optional

import tensorflow as tf

from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.training.inputs import check_vocab_fits, load_vocab

OPTIONS_FILE = "options.json"
#: beside the checkpoints: the training corpus's token and sentence counts
#: and unigram perplexity (the bar evaluate() holds each direction to)
TRAINING_DATA_FILE = "training_data.json"


class CheckpointError(ValueError):
    """A save_dir whose checkpoint cannot be used as asked."""


def model_checkpoint(lm: LanguageModel, **objects) -> tf.train.Checkpoint:
    """A checkpoint holding every variable of ``lm`` by its Keras path.

    The variables go in as a flat ``{path: variable}`` dict (``/`` written
    ``:``): the names are the layers' own paths, independent of how objects
    nest, and make a checkpoint that does not fit the options easy to
    diagnose (``_check_fits`` compares them before restoring).
    """
    weights = {v.path.replace("/", ":"): v for v in lm.variables}
    return tf.train.Checkpoint(weights=weights, **objects)


def _check_fits(lm: LanguageModel, path: str, options_file: str) -> None:
    """Raises ``CheckpointError`` naming the variables of ``lm`` and of the
    checkpoint at ``path`` whose shapes differ or that only one has."""
    stored = {
        name.split("/")[1]: tuple(shape)
        for name, shape in tf.train.list_variables(path)
        if name.startswith("weights/")
    }
    wanted = {v.path.replace("/", ":"): tuple(v.shape) for v in lm.variables}
    old_layout = [k for k in stored
                  if k.endswith(("kernel", "projection_kernel"))
                  and k + "_t" in wanted and k not in wanted]
    if old_layout:
        raise CheckpointError(
            f"{path}: written before 2026-11-24, when the LSTM cells held "
            f"bilm-tf's kernel layout ({old_layout[0].replace(':', '/')}; "
            "now kernel_t, its transpose): dump it to HDF5 with the "
            "version that wrote it (dump_weights.py) and continue with "
            "train --init_weights")
    problems = [
        f"{k.replace(':', '/')}: options give shape {shape}, checkpoint "
        f"{'has none' if k not in stored else 'has ' + str(stored[k])}"
        for k, shape in wanted.items() if stored.get(k) != shape
    ] + [
        f"{k.replace(':', '/')}: in the checkpoint ({stored[k]}), not in "
        "the model"
        for k in stored if k not in wanted
    ]
    if problems:
        raise CheckpointError(
            f"{options_file} does not fit checkpoint {path}: "
            + "; ".join(problems[:6])
            + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        )


def restore_checkpoint(checkpoint: tf.train.Checkpoint, lm: LanguageModel,
                       save_dir: str, *, partial: bool = False,
                       path: Optional[str] = None) -> str:
    """Restores the latest checkpoint of ``save_dir`` (or the one at
    ``path``); returns its path.

    Raises:
        CheckpointError: there is none, or its variables do not fit the
            model that ``save_dir/options.json`` describes (the message names
            both files, the variables and their shapes).
    """
    if path is None:
        path = tf.train.latest_checkpoint(save_dir)
    if path is None:
        raise CheckpointError(f"{save_dir}: no checkpoint found")
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    _check_fits(lm, path, options_file)
    try:
        status = checkpoint.restore(path)
        if partial:
            status.expect_partial()
        status.assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        raise CheckpointError(
            f"{options_file} does not fit checkpoint {path}: {e}"
        ) from None
    return path


class DataStream:
    """Where a run's training data comes from, kept in its checkpoints.

    ``seed`` fixes the stream (shard order and shuffles), ``start_step`` is
    the global step at which it started, ``batch_size`` its global batch.
    A run resumed after a crash (:func:`~bilm_keras.training.restart`
    without ``n_epochs``) rebuilds the same stream and passes over the
    ``step - start_step`` batches already trained on, so no sentence is
    seen twice or skipped (bilm-tf reshuffled). A new stream starts when there is none to
    continue: a fresh run, new epochs (fine-tuning), another batch size,
    or a checkpoint written before streams were saved.
    """

    def __init__(self):
        self.variables = {
            name: tf.Variable(0, dtype=tf.int64, trainable=False,
                              name=f"data_{name}")
            for name in ("seed", "start_step", "batch_size")
        }

    @staticmethod
    def in_checkpoint(path: str) -> bool:
        """Whether the checkpoint at ``path`` recorded its data stream."""
        return any(name.startswith("data_stream/")
                   for name, _ in tf.train.list_variables(path))

    def resolve(self, *, restored: bool, continue_stream: bool, step: int,
                batch_size: int, seed: Optional[int]) -> tuple:
        """``(stream seed, batches to skip)``, recorded for the next
        checkpoint."""
        v = self.variables
        if (restored and continue_stream
                and int(v["batch_size"].numpy()) == batch_size):
            stream_seed = int(v["seed"].numpy())
            skip = step - int(v["start_step"].numpy())
        else:
            base = seed if seed is not None else random.SystemRandom(
            ).randrange(2**31)
            stream_seed, skip = base + step, 0
            v["seed"].assign(stream_seed)
            v["start_step"].assign(step)
            v["batch_size"].assign(batch_size)
        return stream_seed, skip


def load_trained_model(save_dir: str, *, vocab_file=None,
                       path: Optional[str] = None) -> tuple:
    """The latest checkpoint of ``save_dir`` (or the one at ``path``) as
    an inference model.

    Returns:
        ``(options, lm, vocab)``: the :class:`BiLMOptions` of
        ``save_dir/options.json``, the restored :class:`LanguageModel`
        (no dropout, no optimizer) and the vocabulary of ``vocab_file``
        (None without one).

    Raises:
        CheckpointError: no checkpoint, or one that does not fit the
            options.
        OptionsError: ``vocab_file``'s size is not the options'
            ``n_tokens_vocab``.
    """
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    vocab = None
    if vocab_file is not None:
        vocab = load_vocab(vocab_file, options)
        check_vocab_fits(options, vocab, vocab_file, options_file)
    lm = LanguageModel.from_options(options, training=False)
    # the checkpoint holds every variable (restore_checkpoint checks):
    # no random initial values to compute and keep
    with placeholder_weights():
        lm.build_all()
    restore_checkpoint(model_checkpoint(lm), lm, save_dir, partial=True,
                       path=path)
    return options, lm, vocab
