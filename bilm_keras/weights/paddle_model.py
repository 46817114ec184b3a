"""A PaddlePaddle ELMo model, read into bilm-tf's terms: the value both
Paddle readers return and every Paddle consumer takes.

Two Paddle systems wrote ELMo models (docs/paddle.md):

* Fluid 1.x ``PaddleNLP/ELMO`` (the Chinese encyclopedia "baike" model):
  a ``save_persistables`` directory, one file per variable, word-id input
  (:mod:`bilm_keras.weights.paddle_persistables`,
  :mod:`bilm_keras.weights.paddle_baike`).
* PaddleNLP 2.x ``examples/language_model/elmo``: a ``.pdparams`` pickle of
  ``{name: ndarray}``, character input as bilm-tf's
  (:mod:`bilm_keras.weights.paddle_pdparams`,
  :mod:`bilm_keras.weights.paddlenlp_elmo`).

Each reader turns its files into one :class:`PaddleModel`. It holds the
biLM's weights, already transformed into bilm-tf's HDF5 layout: gate
order, forget-bias constant and orientation. It holds the softmax in
bilm-tf's orientation and the vocabulary in id order. Where the checkpoint
holds them, it holds the Adagrad accumulators too. Nothing here imports
TensorFlow or Paddle.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import numpy as np


class PaddleFormatError(ValueError):
    """A Paddle file or directory that does not fit: the message is one line
    naming the file (or directory), the field or variable, the expected and
    the found value."""


@dataclasses.dataclass(frozen=True)
class PaddleModel:
    """A Paddle ELMo checkpoint in bilm-tf's terms.

    Attributes:
        source: the directory or ``.pdparams`` file it was read from.
        system: ``"fluid-baike"`` or ``"paddlenlp"``.
        options: the ``options.json`` a converted model gets, with
            bilm-tf's keys. It has ``char_cnn`` for PaddleNLP's character
            input, and none for the baike model's word input.
        lm_weights: bilm-tf HDF5 dataset path -> array, exactly what
            ``lm_weights.hdf5`` holds (float32).
        softmax_weight: ``(n_tokens_vocab, projection_dim)``, bilm-tf's
            orientation (one softmax for both directions, as both systems
            and bilm-tf have).
        softmax_bias: ``(n_tokens_vocab,)``.
        vocab: the words in id order, as ``vocab.txt`` lines, with
            ``<S>``, ``</S>`` and ``<UNK>`` among them. ``None`` where the
            checkpoint holds none and no vocabulary file was given.
        accumulators: Adagrad accumulators under the same keys as
            ``lm_weights``, plus ``"softmax/W"`` and ``"softmax/b"``. They
            have the orientation of the weights they belong to. Empty where
            the checkpoint holds none.
    """

    source: str
    system: str
    options: dict
    lm_weights: Dict[str, np.ndarray]
    softmax_weight: np.ndarray
    softmax_bias: np.ndarray
    vocab: Optional[List[str]] = None
    accumulators: Dict[str, np.ndarray] = dataclasses.field(
        default_factory=dict)
