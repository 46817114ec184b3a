"""One training step: every replica's forward and backward pass, the
all-reduce, clipping and the Adagrad update.

What bilm-tf's ``training.py`` did, on :class:`LanguageModel`:

* Adagrad on the gradients of ``loss * unroll_steps``, clipped by their
  global norm ``all_clip_norm_val``. The softmax's and the embeddings'
  gradients stay sparse, and :class:`RowSparseAdagrad` updates only their
  rows.
* Every replica carries its own LSTM states from one window of
  ``unroll_steps`` tokens to the next, as truncated backpropagation
  through time. The states go into the step function and come back out of
  it, as per-replica values.
* ``batch_size`` is the *global* batch: each of the ``R`` replicas gets
  ``batch_size / R`` rows. bilm-tf's ``batch_size`` was per GPU.

At ``mixed_float16`` the loss is scaled (:class:`DynamicLossScale`), so
that gradients float16 products would round to zero do not. The model's
variables and Adagrad's accumulators are float32 at every precision.
"""

from __future__ import annotations

import random
from typing import Optional, Sequence

import tensorflow as tf

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras._utils.graph_function import graph_function
from bilm_keras.layers.dropout import fold_seed
from bilm_keras.layers.precision import compute_dtype_of
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions


def _sum_repeated_rows(grad):
    """An ``IndexedSlices`` gradient with each row once, its repeats
    summed. Other gradients come back unchanged.

    A gather's gradient lists a row once per lookup. The global norm and
    Adagrad's ``accumulator += g * g`` need each row's total, as the dense
    gradient has it. The update then touches only the rows the batch used,
    as bilm-tf's sparse Adagrad did. A dense update would touch an
    ``(n_tokens_vocab, dim)`` tensor per step, 793k x 512 floats for the
    published softmax.

    ``grad.values`` ``(lookups, dim)`` becomes ``(distinct rows, dim)``.
    """
    if not isinstance(grad, tf.IndexedSlices):
        return grad
    rows, position = tf.unique(grad.indices)
    values = tf.math.unsorted_segment_sum(grad.values, position,
                                          tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, grad.dense_shape)


class DynamicLossScale:
    """Keras' ``LossScaleOptimizer`` rule, for a step that applies its own
    updates.

    The loss is multiplied by ``scale`` before the gradients are taken,
    and they are divided by it after. A step whose gradients are not all
    finite changes no weight and halves ``scale``. ``scale`` doubles after
    ``growth_steps`` finite steps in a row.

    Args:
        initial_scale: the first scale (Keras': 2 ** 15).
        growth_steps: finite steps before the scale doubles (Keras' 2000).
    """

    def __init__(self, initial_scale: float = 2.0**15,
                 growth_steps: int = 2000):
        self.growth_steps = growth_steps
        self.scale = tf.Variable(initial_scale, trainable=False,
                                 dtype=tf.float32, name="loss_scale")
        self.finite_steps = tf.Variable(0, trainable=False, dtype=tf.int64,
                                        name="loss_scale_finite_steps")

    def unscale(self, grads):
        """``(grads / scale, all finite)``, and the scale updated.

        Gradients that are not all finite come back as zeros, since an
        Adagrad step on zeros changes nothing."""
        def divided(g):
            if isinstance(g, tf.IndexedSlices):
                return tf.IndexedSlices(g.values / self.scale, g.indices,
                                        g.dense_shape)
            return g / self.scale

        grads = [divided(g) for g in grads]
        finite = tf.reduce_all([
            tf.reduce_all(tf.math.is_finite(
                g.values if isinstance(g, tf.IndexedSlices) else g))
            for g in grads])

        def zeroed(g):
            if isinstance(g, tf.IndexedSlices):
                return tf.IndexedSlices(tf.where(finite, g.values, 0.0),
                                        g.indices, g.dense_shape)
            return tf.where(finite, g, 0.0)

        grow = tf.logical_and(finite,
                              self.finite_steps + 1 >= self.growth_steps)
        self.scale.assign(tf.where(
            finite, tf.where(grow, self.scale * 2.0, self.scale),
            self.scale / 2.0))
        self.finite_steps.assign(tf.where(
            tf.logical_and(finite, tf.logical_not(grow)),
            self.finite_steps + 1, tf.zeros_like(self.finite_steps)))
        return [zeroed(g) for g in grads], finite


def _apply_adagrad(strategy, optimizer, grads, variables) -> None:
    """One Adagrad step on the mirrored ``variables`` (cross-replica
    context), with ``grads`` already reduced and clipped.

    Keras' ``apply_gradients`` all-reduces again and needs replica
    context. So each mirrored variable gets the Adagrad update directly,
    as Keras' own distributed update does (``strategy.extended.update``).
    """
    with tf.name_scope("adagrad_update"):
        learning_rate = tf.cast(optimizer.learning_rate, tf.float32)
        for grad, variable in zip(grads, variables):
            strategy.extended.update(
                variable.value,
                lambda var, g: optimizer.update_step(g, var, learning_rate),
                args=(grad,), group=False,
            )
        optimizer.iterations.assign_add(1)


def make_train_step(lm: LanguageModel, optimizer, strategy,
                    options: BiLMOptions, *, sparse_gradients: bool = True,
                    dropout_seed: Optional[int] = None,
                    variables: Optional[Sequence] = None,
                    precision: str = DEFAULT_PRECISION):
    """``train_step(batch, states) -> (loss, grad_norm, states,
    direction_losses)``.

    ``batch`` and ``states`` are per-replica values, plain tensors under
    the default strategy. The returned states feed the next call. Each
    replica gets ``(batch / R, time)`` ids (:mod:`.inputs`) and its
    states ``{direction: [(c, h), ...]}``, ``c`` ``(batch / R, dim)`` and
    ``h`` ``(batch / R, projection_dim)`` per layer.

    ``loss`` is the training loss, the mean over directions.
    ``direction_losses`` ``{direction: ()}`` holds each direction's mean
    token loss. Both are averaged over the replicas.

    ``sparse_gradients=False`` makes the softmax's and the embeddings'
    gradients dense before the all-reduce. The updates are the same. It
    suits a strategy whose all-reduce of rows, an all-gather, is slower
    than a dense sum, e.g. a small vocabulary over many replicas.
    ``bench/train_throughput.py --compare dense_gradients`` times both.

    Dropout masks are a function of ``dropout_seed``, the global step and
    the replica. A ``dropout_seed`` of None is drawn once from the system.
    The masks are the same in the fast and the plain LSTM path
    (:mod:`bilm_keras.layers.dropout`).

    ``variables``: the ones to train, by default all trainable ones. The
    others get no gradient, no update and no accumulator change. The
    gradient norm is theirs alone, as in the warm-up's softmax-only step.

    ``precision``: the model's (``bilm_keras.layers.precision``), set on
    ``lm`` by :func:`~bilm_keras.training.model_setup.build_model`. At
    ``mixed_float16`` the loss is scaled by a :class:`DynamicLossScale`,
    kept as the step's ``loss_scale`` attribute.
    """
    rows_once = _sum_repeated_rows if sparse_gradients else (
        tf.convert_to_tensor)
    variables = (lm.trainable_variables if variables is None
                 else list(variables))
    n_replicas = strategy.num_replicas_in_sync
    sum_op, mean_op = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
    if dropout_seed is None:
        dropout_seed = random.SystemRandom().randrange(2**31)
    loss_scale = (DynamicLossScale()
                  if compute_dtype_of(precision) == "float16" else None)

    def replica_step(batch, states):
        # this step's and this replica's dropout masks
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        step_seed = fold_seed(
            tf.stack([tf.constant(dropout_seed, tf.int64),
                      tf.cast(optimizer.iterations, tf.int64)]),
            replica,
        )
        with tf.GradientTape() as tape:
            out = lm(batch, initial_states=states, training=True,
                     dropout_seed=step_seed)
            # bilm-tf differentiates loss * unroll_steps; dividing by the
            # replicas makes the sum over replicas the global-batch gradient
            scaled = out["loss"] * options.unroll_steps / n_replicas
            if loss_scale is not None:
                scaled = scaled * loss_scale.scale
        grads = tape.gradient(scaled, variables)
        # the softmax's and the embeddings' gradients stay IndexedSlices
        # (rows the batch touched), each row once
        grads = [rows_once(g) for g in grads]
        direction_losses = {
            d: out["loss_sum"][d] / tf.maximum(out["n_tokens"][d], 1.0)
            for d in lm.directions
        }
        return grads, out["loss"], out["final_states"], direction_losses

    @graph_function
    def train_step(batch, states):
        # 1. per-replica forward + backward on its rows, with its states
        grads, loss, states, direction_losses = strategy.run(
            replica_step, args=(batch, states))
        # 2. sum the replicas' gradients (all-reduce; rows of sparse ones
        #    are gathered, and a row several replicas touched summed)
        grads = [rows_once(strategy.reduce(sum_op, g, axis=None))
                 for g in grads]
        if loss_scale is not None:  # a step that overflowed changes nothing
            grads, _ = loss_scale.unscale(grads)
        # 3. clip by global norm (sparse rows count once each), then one
        #    Adagrad step on the mirrored variables (cross-replica context:
        #    no second aggregation; sparse gradients update their rows only)
        grads, grad_norm = tf.clip_by_global_norm(
            grads, options.all_clip_norm_val
        )
        _apply_adagrad(strategy, optimizer, grads, variables)
        direction_losses = {d: strategy.reduce(mean_op, v, axis=None)
                            for d, v in direction_losses.items()}
        return (strategy.reduce(mean_op, loss, axis=None), grad_norm, states,
                direction_losses)

    train_step.loss_scale = loss_scale
    return train_step
