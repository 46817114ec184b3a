"""Train, resume and evaluate a biLM with a custom ``tf.distribute`` loop.

What bilm-tf's ``training.py`` did, on :class:`LanguageModel` (which runs the
shared :class:`BiLMBackbone`):

* Adagrad (``learning_rate``, initial accumulator 1.0) on the gradients of
  ``loss * unroll_steps``, clipped by their global norm
  ``all_clip_norm_val``; the softmax's and the embeddings' gradients stay
  sparse, and :class:`RowSparseAdagrad` updates only their rows;
* every replica carries its own LSTM states from one window of
  ``unroll_steps`` tokens to the next (truncated backpropagation through
  time): the states go into the step function and come back out of it, as
  per-replica values;
* ``--batch_size`` is the *global* batch: each of the ``R`` replicas gets
  ``batch_size / R`` rows (bilm-tf's ``batch_size`` was per GPU);
* one epoch is ``n_train_tokens / (batch_size * unroll_steps)`` steps;
* checkpoints (model, optimizer, step) in ``save_dir`` with the resolved
  ``options.json`` beside them, TensorBoard scalars in ``save_dir/logs``.

The data stream is checkpointed too (:class:`DataStream`): a run resumed
after a crash continues it where the checkpoint left it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import shutil
import tempfile
import time
from typing import Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from bilm_keras.atomic_files import write_text_atomic
from bilm_keras.data.lm_dataset import (
    BidirectionalLMDataset,
    CorpusError,
    LMDataset,
    count_corpus,
    count_tokens,
    list_shards,
    lm_dataset_fn,
    make_tf_dataset,
)
from bilm_keras.data.unigram import unigram_perplexity
from bilm_keras.data.vocab_builder import sidecar_path
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary, Vocabulary
from bilm_keras.layers.dropout import fold_seed
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions, OptionsError
from bilm_keras.training.adagrad import RowSparseAdagrad
from bilm_keras.training.adaptation import (
    SOFTMAX_BIASES,
    LMWarmup,
    check_weight_file,
    draw_softmax_weights,
    init_softmax,
    load_pretrained_lm,
    softmax_variables,
)
from bilm_keras.training.strategy import (
    cluster_workers,
    is_chief,
    make_strategy,
)

logger = logging.getLogger(__name__)

OPTIONS_FILE = "options.json"
#: beside the checkpoints: the training corpus's token and sentence counts
#: and unigram perplexity (the bar evaluate() holds each direction to)
TRAINING_DATA_FILE = "training_data.json"


class CheckpointError(ValueError):
    """A save_dir whose checkpoint cannot be used as asked."""


# ------------------------------------------------------------------ helpers
def load_vocab(vocab_file, options: BiLMOptions) -> Vocabulary:
    """bilm-tf's ``load_vocab``: chars for a char-CNN model, tokens if not.

    Raises:
        VocabularyError: the file is missing or lacks ``<S>``, ``</S>`` or
            ``<UNK>`` (named in the message).
    """
    if options.use_character_inputs:
        return UnicodeCharsVocabulary(
            vocab_file, options.char_cnn.max_characters_per_token,
            validate_file=True,
        )
    return Vocabulary(vocab_file, validate_file=True)


def make_dataset(prefix, vocab, options: BiLMOptions, *, test=False,
                 seed=None):
    """``BidirectionalLMDataset`` or forward-only ``LMDataset``."""
    kwargs = dict(test=test, shuffle_on_load=not test, seed=seed)
    if options.bidirectional:
        return BidirectionalLMDataset(prefix, vocab, **kwargs)
    return LMDataset(prefix, vocab, reverse=False, **kwargs)


def steps_per_epoch(options: BiLMOptions) -> int:
    return max(1, options.n_train_tokens
               // (options.batch_size * options.unroll_steps))


def make_optimizer(options: BiLMOptions) -> keras.optimizers.Optimizer:
    # bilm-tf: tf.train.AdagradOptimizer(lr, initial_accumulator_value=1.0),
    # with its sparse update of the softmax's rows
    return RowSparseAdagrad(
        learning_rate=options.learning_rate,
        initial_accumulator_value=1.0,
        epsilon=1e-7,
    )


def build_model(options: BiLMOptions, *, training=True, seed=None,
                init_weights=None, **model_kwargs):
    """A built :class:`LanguageModel` and its Adagrad (call in scope).

    ``init_weights``: a bilm-tf / AllenNLP ``lm_weights.hdf5`` that fills
    every variable of the backbone (domain adaptation; each dataset is
    checked against the options first, see :func:`load_pretrained_lm`);
    the softmax, which the file does not have, gets its random ``W`` and
    a zero bias (:func:`init_softmax` sets the bias from the corpus).
    ``model_kwargs`` go to :class:`LanguageModel` (``unroll_windows``,
    ``dedup_tokens``: the training fast path, on by default).
    """
    lm = LanguageModel.from_options(options, training=training, seed=seed,
                                    **model_kwargs)
    if init_weights is None:
        lm.build_all()
    else:
        # the file fills the backbone: zeros until then, no random values
        # to compute (published model: 1.16 -> 1.07 GB after loading)
        with placeholder_weights():
            lm.build_all()
        load_pretrained_lm(lm, init_weights)
        draw_softmax_weights(lm)
    optimizer = make_optimizer(options)
    optimizer.build(lm.trainable_variables)
    return lm, optimizer


def model_checkpoint(lm: LanguageModel, **objects) -> tf.train.Checkpoint:
    """A checkpoint holding every variable of ``lm`` by its Keras path.

    The variables go in as a flat ``{path: variable}`` dict (``/`` written
    ``:``): the names are the layers' own paths, independent of how objects
    nest, and make a checkpoint that does not fit the options easy to
    diagnose (``_check_fits`` compares them before restoring).
    """
    weights = {v.path.replace("/", ":"): v for v in lm.variables}
    return tf.train.Checkpoint(weights=weights, **objects)


def _check_fits(lm: LanguageModel, path: str, options_file: str) -> None:
    stored = {
        name.split("/")[1]: tuple(shape)
        for name, shape in tf.train.list_variables(path)
        if name.startswith("weights/")
    }
    wanted = {v.path.replace("/", ":"): tuple(v.shape) for v in lm.variables}
    problems = [
        f"{k.replace(':', '/')}: options give shape {shape}, checkpoint "
        f"{'has none' if k not in stored else 'has ' + str(stored[k])}"
        for k, shape in wanted.items() if stored.get(k) != shape
    ] + [
        f"{k.replace(':', '/')}: in the checkpoint ({stored[k]}), not in "
        "the model"
        for k in stored if k not in wanted
    ]
    if problems:
        raise CheckpointError(
            f"{options_file} does not fit checkpoint {path}: "
            + "; ".join(problems[:6])
            + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        )


def restore_checkpoint(checkpoint: tf.train.Checkpoint, lm: LanguageModel,
                       save_dir: str, *, partial: bool = False) -> str:
    """Restores the latest checkpoint of ``save_dir``; returns its path.

    Raises:
        CheckpointError: there is none, or its variables do not fit the
            model that ``save_dir/options.json`` describes (the message names
            both files, the variables and their shapes).
    """
    path = tf.train.latest_checkpoint(save_dir)
    if path is None:
        raise CheckpointError(f"{save_dir}: no checkpoint found")
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    _check_fits(lm, path, options_file)
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


def _check_vocab_fits(options: BiLMOptions, vocab: Vocabulary, vocab_file,
                      options_file) -> None:
    if options.n_tokens_vocab != vocab.size:
        raise OptionsError(
            f"{options_file}: field 'n_tokens_vocab': expected "
            f"{vocab.size} (the size of {vocab_file}), found "
            f"{options.n_tokens_vocab}"
        )


def _scalar_summary(tag: str, value, step: int) -> None:
    """``tf.summary.scalar`` without the tensorboard package (not a
    dependency): the same op with the scalars plugin's metadata."""
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    tf.summary.write(tag, tf.cast(value, tf.float32), step=step,
                     metadata=metadata)


def _format_eta(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# ------------------------------------------------------- the training step
def _sum_repeated_rows(grad):
    """An ``IndexedSlices`` gradient with each row once (repeats summed);
    other gradients unchanged.

    A gather's gradient lists a row once per lookup. The global norm and
    Adagrad's ``accumulator += g * g`` need each row's total, as the dense
    gradient has it; the update then touches only the rows the batch used
    (bilm-tf's sparse Adagrad), instead of a `(n_vocab, dim)` dense tensor
    per step (1.6 GB for the published 793k-token softmax).
    """
    if not isinstance(grad, tf.IndexedSlices):
        return grad
    rows, position = tf.unique(grad.indices)
    values = tf.math.unsorted_segment_sum(grad.values, position,
                                          tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, grad.dense_shape)


def make_train_step(lm: LanguageModel, optimizer, strategy,
                    options: BiLMOptions, *, sparse_gradients: bool = True,
                    dropout_seed: Optional[int] = None,
                    variables: Optional[Sequence] = None):
    """``train_step(batch, states) -> (loss, grad_norm, states,
    direction_losses)``.

    ``batch`` and ``states`` are per-replica values (plain tensors under
    the default strategy); the returned states feed the next call.
    ``loss`` is the training loss (the mean over directions) and
    ``direction_losses`` ``{direction: ()}`` each direction's mean token
    loss, both averaged over the replicas.
    ``sparse_gradients=False`` makes the softmax's and the embeddings'
    gradients dense before the all-reduce (the same updates; for
    comparison, ``bench/train_throughput.py --compare dense_gradients``).
    Dropout masks are a function of ``dropout_seed`` (None: drawn once
    from the system), the global step and the replica, the same in the
    fast and the plain LSTM path (:mod:`bilm_keras.layers.dropout`).
    ``variables``: the ones to train (default: all trainable ones); the
    others get no gradient, no update and no accumulator change, and the
    gradient norm is theirs alone (the warm-up's softmax-only step).
    """
    rows_once = _sum_repeated_rows if sparse_gradients else (
        tf.convert_to_tensor)
    variables = (lm.trainable_variables if variables is None
                 else list(variables))
    n_replicas = strategy.num_replicas_in_sync
    sum_op, mean_op = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
    if dropout_seed is None:
        dropout_seed = random.SystemRandom().randrange(2**31)

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
        grads = tape.gradient(scaled, variables)
        # the softmax's and the embeddings' gradients stay IndexedSlices
        # (rows the batch touched), each row once
        grads = [rows_once(g) for g in grads]
        direction_losses = {
            d: out["loss_sum"][d] / tf.maximum(out["n_tokens"][d], 1.0)
            for d in lm.directions
        }
        return grads, out["loss"], out["final_states"], direction_losses

    def apply_update(grads):
        # Keras' apply_gradients all-reduces again and needs replica
        # context; here the gradients are already reduced and clipped, so
        # each mirrored variable gets the Adagrad update directly, as
        # Keras' own distributed update does (strategy.extended.update)
        learning_rate = tf.cast(optimizer.learning_rate, tf.float32)
        for grad, variable in zip(grads, variables):
            strategy.extended.update(
                variable.value,
                lambda var, g: optimizer.update_step(g, var, learning_rate),
                args=(grad,), group=False,
            )
        optimizer.iterations.assign_add(1)

    @tf.function
    def train_step(batch, states):
        # 1. per-replica forward + backward on its rows, with its states
        grads, loss, states, direction_losses = strategy.run(
            replica_step, args=(batch, states))
        # 2. sum the replicas' gradients (all-reduce; rows of sparse ones
        #    are gathered, and a row several replicas touched summed)
        grads = [rows_once(strategy.reduce(sum_op, g, axis=None))
                 for g in grads]
        # 3. clip by global norm (sparse rows count once each), then one
        #    Adagrad step on the mirrored variables (cross-replica context:
        #    no second aggregation; sparse gradients update their rows only)
        grads, grad_norm = tf.clip_by_global_norm(
            grads, options.all_clip_norm_val
        )
        apply_update(grads)
        direction_losses = {d: strategy.reduce(mean_op, v, axis=None)
                            for d, v in direction_losses.items()}
        return (strategy.reduce(mean_op, loss, axis=None), grad_norm, states,
                direction_losses)

    return train_step


def distributed_batches(strategy, train_prefix, vocab, options, seed,
                        skip_batches=0):
    """An iterator of per-replica batches; every replica's rows stay
    continuous streams from one batch to the next. The stream of ``seed``
    starts after its first ``skip_batches`` batches (per input pipeline)."""
    n_workers = cluster_workers() if isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy) else 1
    if n_workers > 1:
        if strategy.num_replicas_in_sync != n_workers:
            raise ValueError(
                "MultiWorkerMirroredStrategy with several replicas per "
                "worker is not supported (one device per worker)"
            )
        dataset = strategy.distribute_datasets_from_function(lm_dataset_fn(
            train_prefix, vocab, global_batch_size=options.batch_size,
            num_steps=options.unroll_steps,
            bidirectional=options.bidirectional, shuffle_on_load=True,
            seed=seed, skip_batches=skip_batches,
        ))
    else:
        data = make_dataset(train_prefix, vocab, options, seed=seed)
        dataset = strategy.experimental_distribute_dataset(
            make_tf_dataset(data, options.batch_size, options.unroll_steps,
                            skip_batches)
        )
    return iter(dataset)


class DataStream:
    """Where a run's training data comes from, kept in its checkpoints.

    ``seed`` fixes the stream (shard order and shuffles), ``start_step`` is
    the global step at which it started, ``batch_size`` its global batch. A
    run resumed after a crash (:func:`restart` without ``n_epochs``)
    rebuilds the same stream and passes over the ``step - start_step``
    batches already trained on, so no sentence is seen twice or skipped
    (bilm-tf reshuffled). A new stream starts when there is none to
    continue: a fresh run, new epochs (fine-tuning), another batch size,
    or a checkpoint written before streams were saved.
    """

    def __init__(self):
        self.variables = {
            name: tf.Variable(0, dtype=tf.int64, trainable=False,
                              name=f"data_{name}")
            for name in ("seed", "start_step", "batch_size")
        }

    @staticmethod
    def in_checkpoint(path: str) -> bool:
        return any(name.startswith("data_stream/")
                   for name, _ in tf.train.list_variables(path))

    def resolve(self, *, restored: bool, continue_stream: bool, step: int,
                batch_size: int, seed: Optional[int]) -> tuple:
        """``(stream seed, batches to skip)``, recorded for the next
        checkpoint."""
        v = self.variables
        if (restored and continue_stream
                and int(v["batch_size"].numpy()) == batch_size):
            stream_seed = int(v["seed"].numpy())
            skip = step - int(v["start_step"].numpy())
        else:
            base = seed if seed is not None else random.SystemRandom(
            ).randrange(2**31)
            stream_seed, skip = base + step, 0
            v["seed"].assign(stream_seed)
            v["start_step"].assign(step)
            v["batch_size"].assign(batch_size)
        return stream_seed, skip


# ---------------------------------------------------------------- training
def _check_adaptation(init_weights, freeze_lm_steps, softmax_bias,
                      resuming) -> None:
    """The adaptation arguments, checked before any corpus pass."""
    if not (isinstance(freeze_lm_steps, int) and freeze_lm_steps >= 0):
        raise ValueError(f"--freeze_lm_steps: expected an integer >= 0, "
                         f"found {freeze_lm_steps!r}")
    if softmax_bias not in SOFTMAX_BIASES:
        raise ValueError(f"--softmax_bias: expected one of "
                         f"{', '.join(SOFTMAX_BIASES)}, found "
                         f"{softmax_bias!r}")
    if init_weights is None:
        if freeze_lm_steps:
            raise ValueError("--freeze_lm_steps: expected 0 without "
                             f"--init_weights, found {freeze_lm_steps}")
        return
    if resuming:
        raise CheckpointError(
            "--init_weights starts a new run; a checkpoint continues with "
            "its own weights (restart.py, without --init_weights)"
        )
    check_weight_file(init_weights)


def train(
    *,
    options: BiLMOptions,
    train_prefix: str,
    vocab_file: str,
    save_dir: str,
    n_gpus: Optional[int] = None,
    devices: Optional[Sequence[str]] = None,
    batch_size: Optional[int] = None,
    n_epochs: Optional[int] = None,
    n_train_tokens: Optional[int] = None,
    save_every: int = 1250,
    log_every: int = 100,
    max_to_keep: int = 5,
    seed: Optional[int] = None,
    fast_path: bool = True,
    init_weights: Optional[str] = None,
    freeze_lm_steps: int = 0,
    softmax_bias: str = "unigram",
    _resume: bool = False,
    _extra_steps: Optional[int] = None,
) -> dict:
    """Trains a biLM from scratch (or, through :func:`restart`, resumes).

    Args:
        options: the model and training options (``n_tokens_vocab`` is
            filled from ``vocab_file``).
        train_prefix: glob of training shards.
        vocab_file: vocabulary with ``<S>``, ``</S>``, ``<UNK>``.
        save_dir: checkpoints, ``options.json`` and TensorBoard logs.
        n_gpus, devices: see :func:`make_strategy`.
        batch_size, n_epochs, n_train_tokens: override the options;
            ``n_train_tokens`` is counted from the corpus when neither
            gives it.
        save_every: steps between checkpoints (and one at the end).
        log_every: steps between progress lines / TensorBoard points.
        seed: initialisation, data-order and dropout seed (None: random).
        fast_path: run the LSTMs statically unrolled, both directions
            batched, and the char-CNN once per distinct token
            (:class:`LanguageModel`'s ``unroll_windows`` and
            ``dedup_tokens``); False: the plain per-direction loop. The
            same numbers (tests/training/test_fast_path.py); the fast path
            is about 2x faster on a CPU.
        init_weights: domain adaptation: a bilm-tf / AllenNLP
            ``lm_weights.hdf5`` matching ``options`` whose weights the
            backbone starts from (:mod:`bilm_keras.training.adaptation`);
            the softmax is new, for ``vocab_file``.
        freeze_lm_steps: with ``init_weights``, the first global steps
            that train only the softmax (kept in the checkpoints: a restart
            finishes the warm-up). Part of the run's steps, not extra.
        softmax_bias: with ``init_weights``, the new softmax's bias:
            ``"unigram"`` (log target frequencies of ``train_prefix``) or
            ``"zeros"`` (bilm-tf's).

    Returns:
        dict: ``step`` (final global step), ``perplexity`` (train, last
        log window, sampled softmax: the mean over directions),
        ``direction_perplexity`` (``{direction: perplexity}``, the same
        window), ``tokens_per_second``, ``checkpoint``, ``options``
        and ``model`` (the trained :class:`LanguageModel`).
    """
    save_dir = os.fspath(save_dir)
    _check_adaptation(init_weights, freeze_lm_steps, softmax_bias, _resume)
    strategy = make_strategy(n_gpus=n_gpus, devices=devices)
    chief = is_chief(strategy)

    # ---- options: flags override the file; vocab size and token count
    #      come from the data, never by hand
    changes = {k: v for k, v in (("batch_size", batch_size),
                                 ("n_epochs", n_epochs),
                                 ("n_train_tokens", n_train_tokens))
               if v is not None}
    options = options.replace(**changes)
    vocab = load_vocab(vocab_file, options)
    list_shards(train_prefix)  # a missing/empty glob fails here, clearly
    if _resume:
        _check_vocab_fits(options, vocab, vocab_file,
                          os.path.join(save_dir, OPTIONS_FILE))
    options = options.replace(n_tokens_vocab=vocab.size)
    # one pass over the text: the token count (bilm-tf set it by hand),
    # the unigram perplexity that evaluate() holds each direction to and,
    # when adapting, the new softmax's bias
    corpus, token_counts = count_corpus(train_prefix)
    if corpus["n_tokens"] == 0:
        raise CorpusError(
            f"{train_prefix}: no tokens to train on ({corpus['n_files']}"
            f" file(s), {corpus['n_skipped_lines']} empty or "
            "whitespace-only line(s) skipped)"
        )
    corpus["unigram_perplexity"] = unigram_perplexity(
        token_counts, corpus["n_sentences"], vocab)
    if options.n_train_tokens is None or (
            _resume and n_train_tokens is None and _extra_steps is not None):
        options = options.replace(n_train_tokens=corpus["n_tokens"])
    n_replicas = strategy.num_replicas_in_sync
    if options.batch_size % n_replicas:
        raise ValueError(
            f"--batch_size: expected a multiple of the {n_replicas} "
            f"replicas, found {options.batch_size}"
        )
    if seed is not None:
        keras.utils.set_random_seed(seed)

    with strategy.scope():
        # ---- model, optimizer, checkpoint (restored when resuming)
        # resuming restores every variable: no random initial values
        with (placeholder_weights() if _resume
              else contextlib.nullcontext()):
            lm, optimizer = build_model(options, seed=seed,
                                        unroll_windows=fast_path,
                                        dedup_tokens=fast_path,
                                        init_weights=init_weights)
        if init_weights is not None:
            init_softmax(lm, softmax_bias, token_counts=token_counts,
                         n_sentences=corpus["n_sentences"], vocab=vocab)
        del token_counts  # a large corpus's vocabulary, not needed now
        step = optimizer.iterations
        stream = DataStream()
        warmup = LMWarmup(freeze_lm_steps)
        latest = tf.train.latest_checkpoint(save_dir) if _resume else None
        stream_saved = latest is not None and DataStream.in_checkpoint(latest)
        warmup_saved = latest is not None and LMWarmup.in_checkpoint(latest)
        checkpoint = model_checkpoint(lm, optimizer=optimizer)
        if stream_saved:
            checkpoint.data_stream = stream.variables
        if warmup_saved:
            checkpoint.lm_frozen_until = warmup.until
        if _resume:
            restored = restore_checkpoint(checkpoint, lm, save_dir)
            print(f"restored {restored} at step {int(step.numpy())}",
                  flush=True)
        elif tf.train.latest_checkpoint(save_dir) is not None:
            raise CheckpointError(
                f"{save_dir}: already holds a checkpoint; continue it with "
                "restart.py or choose an empty --save_dir"
            )
        # saved from now on (also when resuming an older checkpoint)
        checkpoint.data_stream = stream.variables
        checkpoint.lm_frozen_until = warmup.until
        # non-chief workers write to a scratch directory (collective saves)
        ckpt_dir = save_dir if chief else tempfile.mkdtemp(prefix="bilm_w")
        manager = tf.train.CheckpointManager(
            checkpoint, ckpt_dir, max_to_keep=max_to_keep,
            checkpoint_name="model",
        )
        if chief:
            os.makedirs(save_dir, exist_ok=True)
            options.to_json(os.path.join(save_dir, OPTIONS_FILE))
            write_text_atomic(
                os.path.join(save_dir, TRAINING_DATA_FILE),
                json.dumps(dict(train_prefix=os.fspath(train_prefix),
                                vocab_file=os.fspath(vocab_file), **corpus),
                           indent=2) + "\n",
            )
            writer = tf.summary.create_file_writer(
                os.path.join(save_dir, "logs"))
        else:
            writer = tf.summary.create_noop_writer()

        start_step = int(step.numpy())
        if _extra_steps is not None:
            last_step = start_step + _extra_steps
        else:
            last_step = options.n_epochs * steps_per_epoch(options)
        stream_seed, skip = stream.resolve(
            restored=stream_saved, continue_stream=_extra_steps is None,
            step=start_step, batch_size=options.batch_size, seed=seed,
        )
        if skip:
            print(f"continuing the data stream after its first {skip} "
                  "batches", flush=True)
        batches = distributed_batches(
            strategy, train_prefix, vocab, options, stream_seed, skip)
        train_step = make_train_step(lm, optimizer, strategy, options,
                                     dropout_seed=seed)
        # adaptation: the steps up to warmup.until train only the softmax
        train_step = warmup.wrap(
            train_step,
            lambda: make_train_step(lm, optimizer, strategy, options,
                                    dropout_seed=seed,
                                    variables=softmax_variables(lm)),
            start_step=start_step,
        )
        per_replica = options.batch_size // n_replicas
        states = strategy.experimental_distribute_values_from_function(
            lambda ctx: lm.zero_states(per_replica)
        )
        tokens_per_step = options.batch_size * options.unroll_steps
        logger.info("training steps %d..%d on %d replica(s)",
                    start_step, last_step, n_replicas)

        # ---- the loop: step, log, checkpoint
        window_loss, window_steps = 0.0, 0
        window_direction = {d: 0.0 for d in lm.directions}
        window_start = run_start = time.perf_counter()
        perplexity, tokens_per_second = float("nan"), float("nan")
        direction_perplexity = {d: float("nan") for d in lm.directions}
        path = None
        for current in range(start_step + 1, last_step + 1):
            loss, grad_norm, states, direction_losses = train_step(
                next(batches), states)
            window_loss += loss  # stays a tensor: no sync per step
            for d in lm.directions:
                window_direction[d] += direction_losses[d]
            window_steps += 1
            if current % log_every == 0 or current == last_step:
                elapsed = time.perf_counter() - window_start
                perplexity = math.exp(float(window_loss) / window_steps)
                direction_perplexity = {
                    d: math.exp(float(v) / window_steps)
                    for d, v in window_direction.items()
                }
                tokens_per_second = window_steps * tokens_per_step / elapsed
                eta = (last_step - current) * elapsed / window_steps
                each = "".join(
                    f"  {d} {p:.2f}" for d, p in direction_perplexity.items()
                ) if len(direction_perplexity) > 1 else ""
                print(f"step {current}/{last_step}  "
                      f"train_perplexity {perplexity:.2f}{each}  "
                      f"grad_norm {float(grad_norm):.3f}  "
                      f"tokens/s {tokens_per_second:.0f}  "
                      f"ETA {_format_eta(eta)}", flush=True)
                with writer.as_default(step=current):
                    _scalar_summary("train_perplexity", perplexity, current)
                    for d, p in direction_perplexity.items():
                        _scalar_summary(f"train_perplexity/{d}", p, current)
                    _scalar_summary("grad_norm", grad_norm, current)
                    _scalar_summary("tokens_per_second", tokens_per_second,
                                    current)
                window_loss, window_steps = 0.0, 0
                window_direction = {d: 0.0 for d in lm.directions}
                window_start = time.perf_counter()
            if current % save_every == 0 or current == last_step:
                path = manager.save(checkpoint_number=current)
        writer.flush()
    if not chief:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return dict(
        step=int(step.numpy()),
        perplexity=perplexity,
        direction_perplexity=direction_perplexity,
        tokens_per_second=tokens_per_second,
        seconds=time.perf_counter() - run_start,
        checkpoint=path if chief else None,
        options=options,
        model=lm,
    )


def restart(
    *,
    save_dir: str,
    train_prefix: str,
    vocab_file: str,
    n_epochs: Optional[int] = None,
    batch_size: Optional[int] = None,
    n_train_tokens: Optional[int] = None,
    **kwargs,
) -> dict:
    """Continues training from the latest checkpoint of ``save_dir``.

    The step counter and Adagrad's accumulators continue. Without
    ``n_epochs`` the run goes on to the step count the saved options
    describe (after a crash); with it, it trains ``n_epochs`` more epochs of
    ``train_prefix`` (fine-tuning on new data; ``n_train_tokens`` is then
    counted from that corpus unless given).

    Other keyword arguments are those of :func:`train`.
    """
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    if not os.path.exists(options_file):
        raise CheckpointError(
            f"{save_dir}: no {OPTIONS_FILE}; is this a train_elmo.py "
            "--save_dir?"
        )
    options = BiLMOptions.from_json(options_file)
    extra = None
    if n_epochs is not None:
        probe = options.replace(
            batch_size=batch_size or options.batch_size,
            n_train_tokens=(n_train_tokens
                            or count_tokens(train_prefix)["n_tokens"]),
        )
        extra = n_epochs * steps_per_epoch(probe)
        n_train_tokens = probe.n_train_tokens
    return train(
        options=options, train_prefix=train_prefix, vocab_file=vocab_file,
        save_dir=save_dir, batch_size=batch_size, n_epochs=n_epochs,
        n_train_tokens=n_train_tokens, _resume=True, _extra_steps=extra,
        **kwargs,
    )


# -------------------------------------------------------------- evaluation
def load_trained_model(save_dir: str, *, vocab_file=None):
    """``(options, LanguageModel)`` restored from ``save_dir`` (no
    dropout, no optimizer); checks ``vocab_file`` fits when given."""
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    vocab = None
    if vocab_file is not None:
        vocab = load_vocab(vocab_file, options)
        _check_vocab_fits(options, vocab, vocab_file, options_file)
    lm = LanguageModel.from_options(options, training=False)
    # the checkpoint holds every variable (restore_checkpoint checks):
    # no random initial values to compute and keep
    with placeholder_weights():
        lm.build_all()
    restore_checkpoint(model_checkpoint(lm), lm, save_dir, partial=True)
    return options, lm, vocab


def training_unigram_perplexity(save_dir: str, vocab_file=None):
    """``(perplexity, source file)`` of the training data's unigram
    perplexity, or ``(None, None)`` when nothing records it.

    ``train`` writes it to ``save_dir/training_data.json``; a vocabulary
    made by ``build_vocab`` has it in its ``.json`` sidecar too.
    """
    candidates = [os.path.join(os.fspath(save_dir), TRAINING_DATA_FILE)]
    if vocab_file is not None:
        candidates.append(sidecar_path(vocab_file))
    for path in candidates:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                value = json.load(f).get("unigram_perplexity")
            if value:
                return float(value), path
    return None, None


def evaluate(
    *,
    save_dir: str,
    vocab_file: str,
    test_prefix: str,
    batch_size: int = 256,
    log_every: int = 100,
    unigram_perplexity: Optional[float] = None,
) -> dict:
    """Heldout perplexity with the full softmax, every token once.

    States carry from batch to batch as in training. Prints the running
    perplexity and, at the end, each direction's and the mean perplexity
    with the files they came from, and a warning for every direction whose
    perplexity is above the unigram perplexity of the training data (it
    predicts worse than word counts do: broken, whatever its training
    perplexity said).

    Args:
        unigram_perplexity: the bar for that warning; None: the training
            data's, as :func:`training_unigram_perplexity` finds it (no
            warning when nothing records it).

    Returns:
        dict: ``forward_perplexity``, ``backward_perplexity`` (bidirectional
        models), ``perplexity`` (``exp`` of the mean of the directions'
        mean losses, bilm-tf's number), ``n_tokens``, ``files``,
        ``unigram_perplexity`` (the bar, or None) and ``warnings`` (the
        warning lines printed).
    """
    source = "given"
    if unigram_perplexity is None:
        unigram_perplexity, source = training_unigram_perplexity(
            save_dir, vocab_file)
    options, lm, vocab = load_trained_model(save_dir, vocab_file=vocab_file)
    data = make_dataset(test_prefix, vocab, options, test=True)
    num_steps = options.unroll_steps

    @tf.function
    def eval_step(batch, states):
        out = lm(batch, initial_states=states, training=False)
        return out["loss_sum"], out["n_tokens"], out["final_states"]

    states = lm.zero_states(batch_size)
    loss_sum = {d: 0.0 for d in lm.directions}
    n_tokens = {d: 0.0 for d in lm.directions}
    for i, batch in enumerate(make_tf_dataset(data, batch_size, num_steps), 1):
        sums, counts, states = eval_step(batch, states)
        for d in lm.directions:
            loss_sum[d] += float(sums[d])
            n_tokens[d] += float(counts[d])
        if i % log_every == 0:
            running = np.mean([loss_sum[d] / max(n_tokens[d], 1)
                               for d in lm.directions])
            print(f"batch {i}  running perplexity {math.exp(running):.3f}",
                  flush=True)
    if not n_tokens["forward"]:
        raise ValueError(f"{test_prefix}: no tokens to evaluate")
    mean_loss = {d: loss_sum[d] / n_tokens[d] for d in lm.directions}
    result = {f"{d}_perplexity": math.exp(v) for d, v in mean_loss.items()}
    result["perplexity"] = math.exp(np.mean(list(mean_loss.values())))
    result["n_tokens"] = int(n_tokens["forward"])
    result["files"] = list(data.shards)
    print(f"heldout files: {', '.join(result['files'])}")
    for d in lm.directions:
        print(f"{d} perplexity: {result[f'{d}_perplexity']:.3f}")
    print(f"mean perplexity: {result['perplexity']:.3f}  "
          f"({result['n_tokens']} tokens)", flush=True)
    result["unigram_perplexity"] = unigram_perplexity
    result["warnings"] = [
        f"WARNING: {d} heldout perplexity {result[f'{d}_perplexity']:.1f} "
        f"is above the unigram perplexity of the training data "
        f"({unigram_perplexity:.1f}, from {source}): the {d} LM predicts "
        "worse than word counts do; do not use its embeddings before "
        "finding out why (a diverged run, or heldout text unlike the "
        "training data)"
        for d in lm.directions
        if unigram_perplexity
        and result[f"{d}_perplexity"] > unigram_perplexity
    ]
    for line in result["warnings"]:
        print(line, flush=True)
    return result
