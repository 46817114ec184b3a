"""A pretrained backbone from files: options + HDF5 weights -> a loaded
:class:`~bilm_keras.models.bilm_backbone.BiLMBackbone`.

The one place that composes "read the options, build, load the weights".
The inference facade :class:`~bilm_keras.BidirectionalLanguageModel` and
the bulk embedding package, with the HDF5 dump and durable runs, both call
it, so neither needs the other.
"""

from __future__ import annotations

import os
from typing import Optional

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras.layers.precision import dtype_policy, set_precision
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_hdf5 import (
    check_options_fit,
    load_bilm_tf_hdf5,
    open_weight_file,
    token_table_rows,
)


def load_backbone(
    options: BiLMOptions,
    weight_file: str | os.PathLike,
    *,
    use_character_inputs: bool = True,
    embedding_weight_file: Optional[str | os.PathLike] = None,
    name: str = "bilm",
    precision: str = DEFAULT_PRECISION,
) -> BiLMBackbone:
    """Builds the backbone ``options`` describe and loads its weights.

    Args:
        options: the model's options, from ``BiLMOptions.from_json``.
        weight_file: bilm-tf ``lm_weights.hdf5``.
        use_character_inputs: True for char ids in, False for token ids.
        embedding_weight_file: for token input, the HDF5 token table of
            :func:`~bilm_keras.dump_token_embeddings`, dataset
            ``embedding``. Its rows set the vocabulary size.
        name: the backbone layer's name.
        precision: what its products compute in, see
            :mod:`~bilm_keras.layers.precision`. ``"float32"`` is exact and
            the default. ``"bfloat16"`` is for AMX CPUs and recent GPUs.
            The weights stay float32 either way. A precision this machine
            does not run fast is logged once as a warning.

    Returns:
        A built :class:`BiLMBackbone` holding the file's weights, built by
        the loader without random initial values.

    Raises:
        ValueError: token input without ``embedding_weight_file``, or an
            unknown precision.
        WeightFileError: a file that is missing or does not fit the
            options. The message names the file, the dataset and both
            shapes.
    """
    n_tokens_vocab = None
    dtype_policy(precision)  # checked before anything is read
    if not use_character_inputs:
        if embedding_weight_file is None:
            raise ValueError(
                "use_character_inputs=False needs embedding_weight_file "
                "(write one with dump_token_embeddings)"
            )
        n_tokens_vocab = token_table_rows(embedding_weight_file)
    with open_weight_file(weight_file) as weights:  # read once
        # the options' sizes against the file's shapes, before any variable
        check_options_fit(options, weights,
                          use_character_inputs=use_character_inputs)
        backbone = BiLMBackbone.from_options(
            options,
            use_character_inputs=use_character_inputs,
            n_tokens_vocab=n_tokens_vocab,
            name=name,
        )
        load_bilm_tf_hdf5(backbone, weights, embedding_weight_file)
    set_precision(backbone, precision)
    return backbone
