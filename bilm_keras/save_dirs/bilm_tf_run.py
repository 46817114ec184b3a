"""A save_dir that bilm-tf's ``train()`` wrote, read: its checkpoint as
our :class:`LanguageModel`, softmax included, as a backbone's weights or
its softmax alone, or written as bilm-tf's own ``dump_weights`` wrote it.

:mod:`bilm_keras.weights.bilm_tf_checkpoint` reads the checkpoint against
a model. This module builds that model from the save_dir's
``options.json``, where bilm-tf's own options load as they are, after
checking that the options ask for no more than the checkpoint holds.

Every function takes the checkpoint as
:func:`~bilm_keras.weights.model_detection.detect_model` found it, once,
for the command: the newest that reads whole, or the one the user named.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

from bilm_keras._utils.problem_list import problem_list
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.weights.bilm_tf_checkpoint import (
    BilmTFCheckpoint,
    assign_bilm_tf_checkpoint,
    read_bilm_tf_checkpoint,
    save_bilm_tf_dump,
)
from bilm_keras.weights.bilm_tf_hdf5 import options_misfits
from bilm_keras.weights.bilm_tf_names import (
    SOFTMAX_B,
    SOFTMAX_W,
    checkpoint_name,
)
from bilm_keras.weights.model_detection import (
    TF1_CHECKPOINT,
    CheckpointFileError,
    SaveDirCheckpoint,
)


def require_bilm_tf(found: SaveDirCheckpoint) -> None:
    """Refuses a checkpoint of ours, which the readers here cannot read."""
    if found.kind != TF1_CHECKPOINT:
        raise CheckpointFileError(
            f"{found.path}: a bilm_keras checkpoint, not bilm-tf's (read it "
            "with load_trained_model)")


def check_options_fit(options: BiLMOptions, options_file: str,
                       found: SaveDirCheckpoint, *,
                       softmax: bool = False) -> None:
    """Refuses options that ask for more than the checkpoint holds, before
    a variable is made (``"dim": 10000000`` would build gigabytes first)."""
    problems = []
    for misfit in options_misfits(options, lambda path: found.shapes.get(
            checkpoint_name(path, found.generation))):
        name = checkpoint_name(misfit.path, found.generation)
        has = "no such variable" if misfit.found is None else misfit.found
        problems.append(f"{name}: options give shape {misfit.expected}, "
                        f"checkpoint has {has} ({misfit.field})")
    rows = found.shapes.get(SOFTMAX_W, (None,))[0]
    if (softmax and not options.share_embedding_softmax and rows is not None
            and (options.n_tokens_vocab or 0) > rows):
        problems.append(f"{SOFTMAX_W}: options give {options.n_tokens_vocab} "
                        f"rows (n_tokens_vocab), checkpoint has "
                        f"{found.shapes[SOFTMAX_W]}")
    if problems:
        raise CheckpointFileError(
            f"{options_file} does not fit bilm-tf checkpoint {found.path}: "
            + problem_list(problems))


def require_softmax(found: SaveDirCheckpoint, shared: bool,
                     purpose: str) -> None:
    """One line when the checkpoint has no softmax to read (``shared``:
    its ``W`` is the token table, only ``b`` is its own)."""
    names = [SOFTMAX_B] if shared else [SOFTMAX_W, SOFTMAX_B]
    missing = [n for n in names if n not in found.shapes]
    if missing:
        raise CheckpointFileError(
            f"{found.path}: holds no softmax ({', '.join(missing)} missing): "
            f"{purpose}")


def load_bilm_tf_language_model(
        save_dir: str | os.PathLike, found: SaveDirCheckpoint, *,
        training: bool = False,
        options: Optional[BiLMOptions] = None,
        purpose: str = ("perplexity needs the softmax (dump-weights and "
                        "export-hub read the LM without it)"),
        **model_kwargs) -> tuple:
    """A bilm-tf checkpoint of ``save_dir`` as a :class:`LanguageModel`,
    softmax included.

    Args:
        save_dir: bilm-tf's save_dir (``options.json``, ``checkpoint``,
            ``model.ckpt-N.*``), from this machine or another.
        found: the checkpoint to read, as detection found it.
        training: build the model with the options' dropout, for
            continuing the run. False builds it without, for evaluation.
        options: the options to build. Default: ``save_dir/options.json``
            as it is.
        purpose: what the softmax is needed for, said when it is missing.
        model_kwargs: passed to :meth:`LanguageModel.from_options`.

    Returns:
        ``(options, lm, checkpoint)``: the :class:`BiLMOptions`, the model
        with every variable assigned, and the
        :class:`~bilm_keras.weights.bilm_tf_checkpoint.BilmTFCheckpoint`
        (its Adagrad accumulators and ``global_step`` for a restart).

    Raises:
        CheckpointFileError: no softmax in the checkpoint, or as
            :func:`~bilm_keras.weights.bilm_tf_checkpoint.read_bilm_tf_checkpoint`.
        OptionsError: ``options.json`` is missing or invalid.
    """
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    if options is None:
        options = BiLMOptions.from_json(options_file)
    require_bilm_tf(found)
    require_softmax(found, options.share_embedding_softmax, purpose)
    check_options_fit(options, options_file, found, softmax=True)
    lm = LanguageModel.from_options(options, training=training,
                                    **model_kwargs)
    with placeholder_weights():  # every variable is assigned below
        lm.build_all()
    checkpoint = read_bilm_tf_checkpoint(found, lm.backbone,
                                         softmax=lm.softmax,
                                         options_file=options_file)
    assign_bilm_tf_checkpoint(checkpoint)
    return options, lm, checkpoint


def dump_bilm_tf_checkpoint(save_dir: str | os.PathLike,
                            found: SaveDirCheckpoint,
                            outfile: str | os.PathLike) -> dict:
    """Writes atomically the HDF5 file bilm-tf's
    ``dump_weights(save_dir, outfile)`` wrote.

    The file has the same datasets and the same float32 values bit for bit,
    for checkpoints of either name generation.

    Args:
        found: the checkpoint to dump, as detection found it. A command
            that dumps the newest refuses it first when newer damaged ones
            were passed over
            (:meth:`~bilm_keras.weights.model_detection.SaveDirCheckpoint.
            require_latest`).

    Returns:
        dict: ``weight_file``, ``checkpoint`` (the prefix read),
        ``generation`` and ``options`` (the save_dir's
        :class:`BiLMOptions`).
    """
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    require_bilm_tf(found)
    check_options_fit(options, options_file, found)
    backbone = BiLMBackbone.from_options(options, name="bilm")
    with placeholder_weights():  # only the table's shapes are needed
        backbone.build_all()
    checkpoint = read_bilm_tf_checkpoint(found, backbone,
                                         options_file=options_file)
    save_bilm_tf_dump(checkpoint, outfile)
    return dict(weight_file=os.fspath(outfile), checkpoint=checkpoint.path,
                generation=checkpoint.generation, options=options)


def load_bilm_tf_backbone(found: SaveDirCheckpoint, backbone, *,
                          options_label: str = "the options"
                          ) -> BilmTFCheckpoint:
    """Fills ``backbone`` from a bilm-tf checkpoint, without its softmax.

    ``backbone`` is built, of options that fit the checkpoint.

    Returns:
        The :class:`BilmTFCheckpoint` read.

    Raises:
        CheckpointFileError: not bilm-tf's, or shapes that do not fit.
            The message names ``options_label``.
    """
    require_bilm_tf(found)
    checkpoint = read_bilm_tf_checkpoint(found, backbone,
                                         options_file=options_label)
    assign_bilm_tf_checkpoint(checkpoint)
    return checkpoint


def read_bilm_tf_softmax(found: SaveDirCheckpoint, *, purpose: str
                         ) -> tuple:
    """``(checkpoint prefix, W, b)``: the softmax of a bilm-tf checkpoint
    as stored, float32 (``W`` None when it is the token table, which the
    backbone holds).

    Raises:
        CheckpointFileError: not bilm-tf's, or no softmax (``purpose``
            says what it was wanted for).
    """
    import tensorflow as tf

    require_bilm_tf(found)
    shared = SOFTMAX_W not in found.shapes and SOFTMAX_B in found.shapes
    require_softmax(found, shared, purpose)
    reader = tf.train.load_checkpoint(found.path)
    W = None if shared else np.asarray(reader.get_tensor(SOFTMAX_W),
                                       np.float32)
    return found.path, W, np.asarray(reader.get_tensor(SOFTMAX_B),
                                     np.float32)
