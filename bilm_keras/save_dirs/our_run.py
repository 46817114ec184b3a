"""A save_dir our training wrote, read back as an inference model.

A run's checkpoint (``save_dir/model-STEP``) holds the model's variables
under its ``weights`` part, by their Keras paths (``/`` written ``:``):
:func:`model_weights` names them, for the training's checkpoint
(:class:`~bilm_keras.training.run_checkpoint.RunCheckpoint`, which adds
the optimizer, the data stream and the carried states) and for
:func:`load_trained_model`, which restores the weights alone.
"""

from __future__ import annotations

import os
from typing import Optional

import tensorflow as tf

from bilm_keras._utils.problem_list import fit_problems, problem_list
from bilm_keras.data.vocab_for_options import check_vocab_fits, load_vocab
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.language_model import BACKBONE_NAME as LM_BACKBONE
from bilm_keras.models.language_model import NAME as LANGUAGE_MODEL
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.weights.model_detection import WEIGHTS, SaveDirCheckpoint


class CheckpointError(ValueError):
    """A save_dir whose checkpoint cannot be used as asked."""


def model_weights(lm: LanguageModel) -> dict:
    """The ``weights`` part: ``{Keras path, '/' written ':': variable}``."""
    return {v.path.replace("/", ":"): v for v in lm.variables}


def model_checkpoint(lm: LanguageModel, **objects) -> tf.train.Checkpoint:
    """A checkpoint of ``lm``'s weights alone (and ``objects``, e.g.
    ``optimizer=``): what an inference model restores from a run's
    checkpoint (:func:`load_trained_model`)."""
    return tf.train.Checkpoint(**{WEIGHTS: model_weights(lm)}, **objects)


def check_fits(lm: LanguageModel, path: str, options_file: str) -> None:
    """Raises ``CheckpointError`` naming the variables of ``lm`` and of the
    checkpoint at ``path`` whose shapes differ or that only one has."""
    stored = {
        name.split("/")[1]: tuple(shape)
        for name, shape in tf.train.list_variables(path)
        if name.startswith(WEIGHTS + "/")
    }
    _check_fits(model_weights(lm), stored, path, options_file)


def _check_fits(wanted: dict, stored: dict, path: str,
                options_file: str) -> None:
    """``wanted``'s variables against ``stored``'s shapes, both by their
    ``weights`` keys."""
    wanted = {key: tuple(v.shape) for key, v in wanted.items()}
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
    problems = fit_problems(
        {k.replace(":", "/"): shape for k, shape in wanted.items()},
        {k.replace(":", "/"): shape for k, shape in stored.items()})
    if problems:
        raise CheckpointError(
            f"{options_file} does not fit checkpoint {path}: "
            + problem_list(problems)
        )


def backbone_weights(backbone) -> dict:
    """A backbone's share of the ``weights`` part, keyed as a run's
    :class:`LanguageModel` saves it: ``{key: variable}``, whatever the
    backbone's place in the model that holds it (an ``ELMoEmbedding``)."""
    prefix = f"{LANGUAGE_MODEL}:{LM_BACKBONE}:"
    weights = {}
    for variable in backbone.weights:
        parts = variable.path.split("/")
        below = parts[parts.index(backbone.name) + 1:]
        weights[prefix + ":".join(below)] = variable
    return weights


def load_run_backbone(backbone, found: SaveDirCheckpoint,
                      options_file: str) -> None:
    """Assigns a built backbone its variables from a run's checkpoint,
    one tensor at a time, with no model around it and no softmax read.

    Args:
        backbone: a :class:`~bilm_keras.models.BiLMBackbone` built from
            the run's options (placeholder weights will do).
        found: the checkpoint, as detection found it: its shapes are
            checked from the index it read.
        options_file: named in errors.

    Raises:
        CheckpointError: variables whose shapes differ or that only one
            side has, all named, before anything is assigned.
    """
    wanted = backbone_weights(backbone)
    prefix = f"{WEIGHTS}/{LANGUAGE_MODEL}:{LM_BACKBONE}:"
    stored = {name.split("/")[1]: tuple(shape)
              for name, shape in found.shapes.items()
              if name.startswith(prefix)}
    _check_fits(wanted, stored, found.path, options_file)
    reader = tf.train.load_checkpoint(found.path)
    for key, variable in wanted.items():
        # tf.train.Checkpoint's key of a variable in a dict
        variable.assign(reader.get_tensor(
            f"{WEIGHTS}/{key}/.ATTRIBUTES/VARIABLE_VALUE"))


def restore_checkpoint(checkpoint: tf.train.Checkpoint, lm: LanguageModel,
                       save_dir: str, *, partial: bool = False,
                       path: Optional[str] = None) -> str:
    """Restores the latest checkpoint of ``save_dir``, or the one at
    ``path``, into ``checkpoint`` and returns its path. ``checkpoint`` is
    ours, from :func:`model_checkpoint` or a :class:`RunCheckpoint`.

    Raises:
        CheckpointError: there is none, or its variables do not fit the
            model that ``save_dir/options.json`` describes. The message
            names both files, the variables and their shapes.
    """
    if path is None:
        path = tf.train.latest_checkpoint(save_dir)
    if path is None:
        raise CheckpointError(f"{save_dir}: no checkpoint found")
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    check_fits(lm, path, options_file)
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
