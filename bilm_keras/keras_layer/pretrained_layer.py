"""``ELMoEmbedding.from_pretrained``'s loading: a resolved model folder
straight into the layer.

Each file is read once, and the weights are held once: the options, the
vocabulary or dictionaries, the alignment and the learned mix are read
from the folder :func:`~bilm_keras.pretrained.resolve_model` gives, the
layer is built with placeholder weights, and the HDF5 weights are
assigned into the layer's own biLM a block at a time
(:func:`~bilm_keras.weights.bilm_tf_hdf5.load_bilm_tf_hdf5`). A Keras
preset, local or ``hf://``, is read by :mod:`.keras_presets`.
"""

from __future__ import annotations

import os

import numpy as np

from bilm_keras.keras_layer.elmo_preprocessor import model_assets
from bilm_keras.keras_layer.keras_presets import load_preset
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.options import BiLMOptions
from bilm_keras.pretrained import registered_model, resolve_model
from bilm_keras.pretrained.hf_hub import preset_folder
from bilm_keras.weights.alignment import alignment_files, read_alignment
from bilm_keras.weights.bilm_tf_hdf5 import (
    check_options_fit,
    load_bilm_tf_hdf5,
)
from bilm_keras.weights.learned_mix import mix_beside


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
    row = registered_model(label)
    if row is not None and row.vocab_note and vocab_file is None:
        raise ValueError(f"vocab_file: {label}: {row.vocab_note}")
    model = resolve_model(spec, cache_dir=cache_dir, mirror=mirror,
                          progress=progress)
    options = BiLMOptions.from_json(model.options_file)
    assets = model_assets(
        options, vocab_file if vocab_file is not None else model.vocab_file,
        model.name)
    aligned = None if alignment is None else read_alignment(
        alignment_files(alignment, model.directory, model.name),
        n_layers=options.lstm.n_layers + 1,
        dim=2 * options.lstm.projection_dim)
    mix = mix_beside(model.directory)
    # the options' sizes against the file's shapes, before any variable
    check_options_fit(options, model.weight_file,
                      use_character_inputs=options.use_character_inputs)
    with placeholder_weights():  # every biLM weight is read next
        layer = cls(options.to_dict(), **assets,
                    alignment_matrices=(0 if aligned is None
                                        else len(aligned.matrices)),
                    **layer_kwargs)
    # a word-input model's token table is its weight file's ``embedding``
    load_bilm_tf_hdf5(layer.bilm, model.weight_file)
    if aligned is not None:
        layer.alignment.assign(np.stack(aligned.matrices))
    if mix is not None:
        layer._start_from_mix(mix, label)
    return layer
