"""The model a run trains and its optimizer, built together.

bilm-tf trained with ``tf.train.AdagradOptimizer(learning_rate,
initial_accumulator_value=1.0)``, whose update of the softmax and the
embeddings is sparse. :class:`RowSparseAdagrad` is that optimizer.
"""

from __future__ import annotations

import keras

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.layers.precision import set_precision
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.save_dirs.bilm_tf_run import load_bilm_tf_backbone
from bilm_keras.training.adagrad import RowSparseAdagrad
from bilm_keras.training.adaptation import (
    draw_softmax_weights,
    load_pretrained_lm,
)
from bilm_keras.training.paddle_adaptation import load_paddle_backbone


def make_optimizer(options: BiLMOptions) -> keras.optimizers.Optimizer:
    """bilm-tf's Adagrad: ``options.learning_rate``, accumulators from
    1.0, sparse updates of the rows a batch touched."""
    return RowSparseAdagrad(
        learning_rate=options.learning_rate,
        initial_accumulator_value=1.0,
        epsilon=1e-7,
    )


def build_model(options: BiLMOptions, *, training=True, seed=None,
                init_weights=None, init_checkpoint=None, init_paddle=None,
                precision=DEFAULT_PRECISION, **model_kwargs):
    """A built :class:`LanguageModel` and its Adagrad. Call in scope.

    Args:
        init_weights: a bilm-tf or AllenNLP ``lm_weights.hdf5`` that fills
            every variable of the backbone, for domain adaptation. Each
            dataset is checked against the options first, see
            :func:`load_pretrained_lm`. The softmax, which the file does
            not have, gets its random ``W`` and a zero bias.
            :func:`init_softmax` sets the bias from the corpus.
        init_checkpoint: the same from a bilm-tf save_dir's checkpoint, a
            :class:`~bilm_keras.weights.model_detection.SaveDirCheckpoint`
            as detection found it. Every variable's shape is checked
            first. Its softmax rows are
            :func:`init_softmax_from_checkpoint`'s.
        init_paddle: the same from a Paddle checkpoint, read as a
            :class:`~bilm_keras.weights.paddle_model.PaddleModel`. Its
            softmax and accumulators are set by
            :mod:`bilm_keras.training.paddle_adaptation`.
        precision: what the model's products compute in, see
            :mod:`bilm_keras.layers.precision`. ``"mixed_bfloat16"`` and
            ``"mixed_float16"`` train with float32 variables and
            accumulators. The default is float32, exact.
        model_kwargs: go to :class:`LanguageModel`. ``unroll_windows`` and
            ``dedup_tokens`` are the training fast path, on by default.
    """
    lm = LanguageModel.from_options(options, training=training, seed=seed,
                                    **model_kwargs)
    if init_weights is None and init_checkpoint is None \
            and init_paddle is None:
        lm.build_all()
    else:
        # the file fills the backbone: zeros until then, no random values
        # to compute and hold (bench/RESULTS.md has the memory this saves)
        with placeholder_weights():
            lm.build_all()
        if init_weights is not None:
            load_pretrained_lm(lm, init_weights)
        elif init_paddle is not None:
            load_paddle_backbone(init_paddle, lm.backbone)
        else:
            load_bilm_tf_backbone(init_checkpoint, lm.backbone,
                                  options_label="the options (--options)")
        draw_softmax_weights(lm)
    set_precision(lm, precision)
    optimizer = make_optimizer(options)
    optimizer.build(lm.trainable_variables)
    return lm, optimizer
