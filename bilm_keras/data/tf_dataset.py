"""Training batches as ``tf.data`` pipelines: one per worker, row
continuity kept under ``tf.distribute`` (:func:`make_tf_dataset`,
:func:`lm_dataset_fn`)."""

from __future__ import annotations

import itertools
from typing import Optional

from bilm_keras.data.lm_dataset import BidirectionalLMDataset, LMDataset
from bilm_keras.data.vocabulary import Vocabulary


def make_tf_dataset(dataset, batch_size: int, num_steps: int,
                    skip_batches: int = 0):
    """A prefetching ``tf.data.Dataset`` of ``dataset``'s batches.

    Python packs the batches in tf.data's background thread while the
    accelerator runs the previous step (``prefetch(AUTOTUNE)``).

    Args:
        dataset: an :class:`LMDataset` or :class:`BidirectionalLMDataset`.
        batch_size: rows per batch of this input pipeline.
        num_steps: tokens per row per batch (``unroll_steps``).
        skip_batches: batches of the stream to pass over first. A resumed
            run so continues where its checkpoint left the data.

    Returns:
        ``tf.data.Dataset`` of dicts with the keys and static shapes of
        ``dataset.output_signature(batch_size, num_steps)``. Each iteration
        of it is a new pass (:meth:`LMDataset.iter_batches`).

    Row continuity under ``tf.distribute``:
        * one worker (default strategy or ``MirroredStrategy``): give
          ``strategy.experimental_distribute_dataset`` this dataset with the
          *global* batch size. Every global batch is split along rows in
          order. So replica ``r`` always gets the same rows
          ``[r * b, (r + 1) * b)``, and each of its rows stays continuous.
        * several workers (``MultiWorkerMirroredStrategy``): build one
          pipeline per worker with :func:`lm_dataset_fn` through
          ``strategy.distribute_datasets_from_function``. Each worker reads
          a disjoint part of the corpus (``shard_index``/``num_shards``).
    """
    import tensorflow as tf

    signature = dataset.output_signature(batch_size, num_steps)
    ds = tf.data.Dataset.from_generator(
        lambda: itertools.islice(
            dataset.iter_batches(batch_size, num_steps), skip_batches, None),
        output_signature=signature,
    )
    return ds.prefetch(tf.data.AUTOTUNE)


# Nine parameters: tf.distribute calls the returned function with the
# input context alone, so everything else the pipeline needs is bound
# here, each a plain value of the run (TrainingRun's).
def lm_dataset_fn(filepattern, vocab: Vocabulary, *, global_batch_size: int,
                  num_steps: int, bidirectional: bool = True,
                  test: bool = False, shuffle_on_load: bool = False,
                  seed: Optional[int] = None, skip_batches: int = 0):
    """A ``dataset_fn(input_context)`` for
    ``strategy.distribute_datasets_from_function``.

    Input pipeline ``input_context.input_pipeline_id`` of
    ``num_input_pipelines``, one per worker, reads its disjoint part of the
    corpus. It yields batches of ``global_batch_size / num_replicas`` rows
    per replica (``input_context.get_per_replica_batch_size``). Pipeline
    ``i`` uses seed ``seed + i`` and passes over its first
    ``skip_batches`` batches. It is meant for one replica per worker, and
    each row then stays continuous on its replica. With several replicas
    per worker, use ``experimental_distribute_dataset``
    (:func:`make_tf_dataset`).
    """

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(
            global_batch_size)
        index = input_context.input_pipeline_id
        kwargs = dict(
            test=test, shuffle_on_load=shuffle_on_load,
            seed=None if seed is None else seed + index,
            shard_index=index,
            num_shards=input_context.num_input_pipelines,
        )
        if bidirectional:
            data = BidirectionalLMDataset(filepattern, vocab, **kwargs)
        else:
            data = LMDataset(filepattern, vocab, **kwargs)
        return make_tf_dataset(data, batch_size, num_steps, skip_batches)

    return dataset_fn
