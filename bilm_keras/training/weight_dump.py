"""A trained checkpoint -> bilm-tf's HDF5 weights + prediction options."""

from __future__ import annotations

import dataclasses
import os

from bilm_keras.options import N_CHARACTERS_WITH_PADDING
from bilm_keras.training.checkpoints import load_trained_model
from bilm_keras.training.options_file import write_options
from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5


def dump_weights(save_dir: str, outfile: str) -> dict:
    """Writes the latest checkpoint of ``save_dir`` as bilm-tf HDF5.

    The file has bilm-tf's layout (``char_embed`` without the padding row,
    no softmax; token models keep ``embedding``), written atomically.
    Beside it goes ``options.json`` for prediction: the training options
    with ``n_characters = 262``, as bilm-tf requires after training (a
    converted ELMoForManyLangs model keeps its own ``n_characters`` and
    gets copies of its ``char.dic``/``word.dic``, named relative to the
    options). Load both with :class:`~bilm_keras.BidirectionalLanguageModel`.

    Returns:
        dict: ``weight_file`` and ``options_file`` written.
    """
    outfile = os.fspath(outfile)
    options, lm, _ = load_trained_model(save_dir)
    if options.char_cnn is not None and options.manylangs is None:
        # 262 loads in bilm-tf and AllenNLP too (bilm_keras takes either)
        options = options.replace(char_cnn=dataclasses.replace(
            options.char_cnn, n_characters=N_CHARACTERS_WITH_PADDING))
    out_dir = os.path.dirname(os.path.abspath(outfile))
    os.makedirs(out_dir, exist_ok=True)
    save_bilm_tf_hdf5(lm.backbone, outfile)
    options_file = os.path.join(out_dir, "options.json")
    write_options(options, options_file)
    return dict(weight_file=outfile, options_file=options_file)
