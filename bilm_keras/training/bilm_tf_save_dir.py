"""A save_dir that bilm-tf's ``train()`` wrote, as a model or a dump.

:mod:`bilm_keras.weights.bilm_tf_checkpoint` reads the checkpoint against
a model; this module builds that model from the save_dir's
``options.json`` (bilm-tf's own options load as they are), so a caller
gives only the folder.
"""

from __future__ import annotations

import os

from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_checkpoint import (
    assign_bilm_tf_checkpoint,
    read_bilm_tf_checkpoint,
    save_bilm_tf_dump,
)

OPTIONS_FILE = "options.json"


def load_bilm_tf_language_model(save_dir: str | os.PathLike, *,
                                training: bool = False,
                                **model_kwargs) -> tuple:
    """bilm-tf's latest checkpoint in ``save_dir`` as a
    :class:`LanguageModel`, softmax included.

    Args:
        save_dir: bilm-tf's save_dir (``options.json``, ``checkpoint``,
            ``model.ckpt-N.*``), from this machine or another.
        training: build the model with the options' dropout (for
            continuing the run); False: without (evaluation).
        model_kwargs: passed to :meth:`LanguageModel.from_options`.

    Returns:
        ``(options, lm, checkpoint)``: the :class:`BiLMOptions`, the model
        with every variable assigned, and the
        :class:`~bilm_keras.weights.bilm_tf_checkpoint.BilmTFCheckpoint`
        (its Adagrad accumulators and ``global_step`` for a restart).

    Raises:
        CheckpointFileError: see
            :func:`~bilm_keras.weights.bilm_tf_checkpoint.read_bilm_tf_checkpoint`.
        OptionsError: ``options.json`` is missing or invalid.
    """
    options_file = os.path.join(os.fspath(save_dir), OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    lm = LanguageModel.from_options(options, training=training,
                                    **model_kwargs)
    with placeholder_weights():  # every variable is assigned below
        lm.build_all()
    checkpoint = read_bilm_tf_checkpoint(save_dir, lm.backbone,
                                         softmax=lm.softmax,
                                         options_file=options_file)
    assign_bilm_tf_checkpoint(checkpoint)
    return options, lm, checkpoint


def dump_bilm_tf_checkpoint(save_dir: str | os.PathLike,
                            outfile: str | os.PathLike) -> dict:
    """Writes the HDF5 file bilm-tf's ``dump_weights(save_dir, outfile)``
    wrote: the same datasets, the same float32 values bit for bit, for
    checkpoints of either name generation; atomically.

    Returns:
        dict: ``weight_file``, ``checkpoint`` (the prefix read) and
        ``generation``.
    """
    options_file = os.path.join(os.fspath(save_dir), OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    backbone = BiLMBackbone.from_options(options, name="bilm")
    with placeholder_weights():  # only the table's shapes are needed
        backbone.build_all()
    checkpoint = read_bilm_tf_checkpoint(save_dir, backbone,
                                         options_file=options_file)
    save_bilm_tf_dump(checkpoint, outfile)
    return dict(weight_file=os.fspath(outfile), checkpoint=checkpoint.path,
                generation=checkpoint.generation)
