"""What a training or evaluation run reads: the vocabulary, the batches and
the number of steps an epoch of them makes.

A batch is a dict of ``(batch, time)`` tensors, ``time`` being
``unroll_steps`` (:func:`~bilm_keras.data.batch_packing.batch_signature`).
They are ``token_ids``, the ``next_token_id`` targets, ``mask`` and
``sentence_start``. A char-CNN model adds ``tokens_characters``
``(batch, time, max_chars)``. A bidirectional one adds a ``_reverse`` twin
of each.
"""

from __future__ import annotations

import tensorflow as tf

from bilm_keras.data.lm_dataset import BidirectionalLMDataset, LMDataset
from bilm_keras.data.tf_dataset import lm_dataset_fn, make_tf_dataset
from bilm_keras.options import BiLMOptions
from bilm_keras.training.strategy import cluster_workers


def make_dataset(prefix, vocab, options: BiLMOptions, *, test=False,
                 seed=None):
    """``BidirectionalLMDataset`` or forward-only ``LMDataset``."""
    kwargs = dict(test=test, shuffle_on_load=not test, seed=seed)
    if options.bidirectional:
        return BidirectionalLMDataset(prefix, vocab, **kwargs)
    return LMDataset(prefix, vocab, reverse=False, **kwargs)


def steps_per_epoch(options: BiLMOptions) -> int:
    """``n_train_tokens / (batch_size * unroll_steps)``, at least 1."""
    return max(1, options.n_train_tokens
               // (options.batch_size * options.unroll_steps))


def distributed_batches(strategy, train_prefix, vocab, options, seed,
                        skip_batches=0):
    """An iterator of per-replica batches. Every replica's rows stay
    continuous streams from one batch to the next. The stream of ``seed``
    starts after its first ``skip_batches`` batches (per input pipeline).

    ``options.batch_size`` is the global batch: each of the ``R`` replicas
    gets ``(batch_size / R, unroll_steps)`` ids.
    """
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
