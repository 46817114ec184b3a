"""``ELMoEmbedding.from_pretrained``'s loading: a resolved model folder
or a training save_dir straight into the layer.

Each file is read once, and the weights are held once: the options, the
vocabulary or dictionaries, the alignment and the learned mix are read
from the folder :func:`~bilm_keras.pretrained.resolve_model` gives, the
layer is built with placeholder weights, and the HDF5 weights are
assigned into the layer's own biLM a block at a time
(:func:`~bilm_keras.weights.bilm_tf_hdf5.load_bilm_tf_hdf5`). A training
save_dir, ours or bilm-tf's, is told by
:func:`~bilm_keras.weights.model_detection.detect_model` and read in
place: its checkpoint's tensors go into the layer's biLM one at a time,
with no language model or softmax built around them. A Keras preset,
local or ``hf://``, is read by :mod:`.keras_presets`.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

import numpy as np

from bilm_keras.keras_layer.elmo_preprocessor import model_assets
from bilm_keras.keras_layer.keras_presets import load_preset
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.pretrained import check_before_download, resolve_model
from bilm_keras.pretrained.hf_hub import preset_folder
from bilm_keras.save_dirs.bilm_tf_run import (
    check_options_fit as check_checkpoint_fit,
    load_bilm_tf_backbone,
)
from bilm_keras.save_dirs.our_run import load_run_backbone
from bilm_keras.save_dirs.weight_dump import prediction_options
from bilm_keras.weights.alignment import alignment_files, read_alignment
from bilm_keras.weights.bilm_tf_hdf5 import (
    check_options_fit,
    load_bilm_tf_hdf5,
    open_weight_file,
)
from bilm_keras.weights.checkpoint_files import list_checkpoints
from bilm_keras.weights.learned_mix import mix_beside
from bilm_keras.weights.model_detection import (
    OUR_RUN,
    TF1_CHECKPOINT,
    DetectedModel,
    detect_model,
)

logger = logging.getLogger(__name__)


def pretrained_layer(cls, spec, layer_kwargs: dict, *, vocab_file=None,
                     cache_dir=None, mirror=None, progress=None,
                     alignment=None):
    """The layer ``cls`` of the model ``spec`` names, weights loaded.

    Args:
        cls: :class:`~bilm_keras.ELMoEmbedding`.
        spec: a registry name, URL, ``hf://`` handle, archive, model
            folder or Keras preset folder.
        layer_kwargs: the layer's arguments (``output``, ``trainable``,
            ``name``, ...).
        vocab_file, cache_dir, mirror, progress, alignment: as
            ``ELMoEmbedding.from_pretrained``'s.
    """
    label = os.fspath(spec)
    folder = preset_folder(label)
    if folder is not None:
        if alignment is not None or vocab_file is not None:
            raise ValueError(
                f"{label}: a Keras preset holds its vocabulary and "
                "alignment: vocab_file and alignment do not apply")
        return load_preset(cls, folder, label, **layer_kwargs)
    run = training_run(label)
    if run is not None:
        return _run_layer(cls, run, layer_kwargs, vocab_file=vocab_file,
                          alignment=alignment)
    check_before_download(label, vocab_given=vocab_file is not None,
                          vocab_flag="vocab_file=")
    model = resolve_model(spec, cache_dir=cache_dir, mirror=mirror,
                          progress=progress)
    options = model.options
    assets = model_assets(
        options, vocab_file if vocab_file is not None else model.vocab_file,
        model.name)
    aligned = _alignment(alignment, options, model.directory, model.name)
    mix = mix_beside(model.directory)
    with open_weight_file(model.weight_file) as weights:  # read once
        # the options' sizes against the file's shapes, before any variable
        check_options_fit(options, weights,
                          use_character_inputs=options.use_character_inputs)
        layer = _placeholder_layer(cls, options, assets, aligned,
                                   layer_kwargs)
        # a word-input model's token table is its weight file's
        # ``embedding``
        load_bilm_tf_hdf5(layer.bilm, weights)
    if mix is not None:
        layer._start_from_mix(mix, label)
    return layer


def training_run(path: str) -> Optional[DetectedModel]:
    """The training save_dir ``path`` names, ours or bilm-tf's, detected
    once. None for anything else, which
    :func:`~bilm_keras.pretrained.resolve_model` reads.

    Raises:
        ValueError: detection's own error for a folder of checkpoints it
            cannot read, naming the file and what is wrong with it.
    """
    # a folder without checkpoints is no run: not read here
    if not (os.path.isdir(path) and list_checkpoints(path)):
        return None
    found = detect_model(path)
    return found if found.family in (OUR_RUN, TF1_CHECKPOINT) else None


def _run_layer(cls, run: DetectedModel, layer_kwargs: dict, *, vocab_file,
               alignment):
    """The layer of a training save_dir's checkpoint, the one detection
    chose, with the options a prediction reads (``dump-weights``')."""
    options_file = run.options_file or os.path.join(run.model_dir,
                                                    OPTIONS_FILE)
    trained = BiLMOptions.from_json(options_file)
    options = prediction_options(trained)
    # the vocabulary before the checkpoint: a wrong one fails first
    assets = model_assets(options, vocab_file, run.given)
    aligned = _alignment(alignment, options, None, run.given)
    found = run.run_checkpoint
    note = found.fallback_note()
    if note is not None:
        logger.warning(note)
    if run.family == TF1_CHECKPOINT:
        # the options' sizes against the checkpoint's, before any variable
        check_checkpoint_fit(trained, options_file, found)
    layer = _placeholder_layer(cls, options, assets, aligned, layer_kwargs)
    if run.family == TF1_CHECKPOINT:
        load_bilm_tf_backbone(found, layer.bilm, options_label=options_file)
    else:
        load_run_backbone(layer.bilm, found, options_file)
    return layer


def _alignment(alignment, options: BiLMOptions, directory, name: str):
    """The alignment ``alignment`` names, read and checked, or None."""
    if alignment is None:
        return None
    return read_alignment(alignment_files(alignment, directory, name),
                          n_layers=options.lstm.n_layers + 1,
                          dim=2 * options.lstm.projection_dim)


def _placeholder_layer(cls, options: BiLMOptions, assets: dict, aligned,
                       layer_kwargs: dict):
    """The layer, its biLM's weights placeholders that are assigned next,
    and the alignment's matrices in it."""
    with placeholder_weights():
        layer = cls(options.to_dict(), **assets,
                    alignment_matrices=(0 if aligned is None
                                        else len(aligned.matrices)),
                    **layer_kwargs)
    if aligned is not None:
        layer.alignment.assign(np.stack(aligned.matrices))
    return layer
