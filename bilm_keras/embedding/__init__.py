"""Bulk embedding: many sentences through a biLM, to memory or to HDF5.

The package's modules, by concept:

* :mod:`.bulk_embedder`: :class:`~.bulk_embedder.BulkEmbedder`, the fast
  stateless path. Distinct tokens are embedded once, sentences sorted into
  compute batches, and the LSTMs run alone per batch.
* :mod:`.compute_batches`: how a chunk of sentences is cut into the
  batches the LSTMs run.
* :mod:`.outputs`: :class:`~.outputs.EmbeddingSpec`, what to embed, and
  the reduction of a sentence's layers. The spec says which output (all
  layers, the top one, their average, a task's mix, a sentence vector),
  which layers and the dtype.
* :mod:`.dump`: embeddings to HDF5 files (``dump_bilm_embeddings``,
  ``dump_token_embeddings``).
* :mod:`.dump_plan`: what a dump checks before it loads a model. It needs
  no TensorFlow, and ``bilm-keras embed`` runs it first.
* :mod:`.runs`: durable runs (``--resume``), with progress kept in parts
  beside the output.
* :mod:`.merge`: the shards of one run joined into one file.
* :mod:`.shards`: which lines shard ``K`` of ``N`` embeds.
* :mod:`.progress`: the progress bar.
* :mod:`.memory`: giving freed memory back to the system during a long
  run.
* with the ``beam`` extra (apache-beam):

  - :mod:`.beam_inference`: :class:`~.beam_inference.EmbedSentences`,
    Beam's ``RunInference`` with
    :class:`~.beam_inference.BiLMModelHandler`.
  - :mod:`.beam_dump`: ``embed --runner``, a whole file as a Beam
    pipeline.
  - :mod:`.beam_files`: their files on any of Beam's file systems.

It stands above :mod:`bilm_keras.models`, since it embeds with a backbone
loaded by :func:`~bilm_keras.models.backbone_loading.load_backbone`. It
stands below the inference facade,
:class:`~bilm_keras.BidirectionalLanguageModel` (``docs/architecture.md``).

The names below are imported on first use (PEP 562). The ``bilm-keras
embed`` command checks its flags with :mod:`.outputs` and :mod:`.shards`
before TensorFlow is imported.
"""

from bilm_keras._utils.lazy import lazy_exports as _lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "BiLMModelHandler": "bilm_keras.embedding.beam_inference",
    "BulkEmbedder": "bilm_keras.embedding.bulk_embedder",
    "EmbedSentences": "bilm_keras.embedding.beam_inference",
    "EmbeddingRunError": "bilm_keras.embedding.runs",
    "EmbeddingSpec": "bilm_keras.embedding.outputs",
    "dump_bilm_embeddings": "bilm_keras.embedding.dump",
    "dump_bilm_embeddings_with_beam": "bilm_keras.embedding.beam_dump",
    "dump_token_embeddings": "bilm_keras.embedding.dump",
    "merge_embedding_files": "bilm_keras.embedding.merge",
    "plan_compute_batches": "bilm_keras.embedding.compute_batches",
}

#: the beam extra's names are reached by name only (a star import must
#: not need apache-beam)
__all__ = sorted(name for name, module in _EXPORTS.items()
                 if ".beam_" not in module)

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
