"""Many sentences embedded by a backbone's LSTMs, with no padding to speak
of: the path behind :meth:`BidirectionalLanguageModel.embed_sentences`,
:func:`~bilm_keras.dump_bilm_embeddings` and ``bilm-keras embed``."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf

from bilm_keras._utils.eager import require_eager
from bilm_keras._utils.graph_function import graph_function
from bilm_keras._utils.settings import check_int
from bilm_keras.data.batcher import Batcher, TokenBatcher, check_sentences
from bilm_keras.data.batcher_for_options import batcher_for_options
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.embedding.compute_batches import plan_compute_batches
from bilm_keras.embedding.outputs import (
    EMBEDDING_OUTPUTS,
    EmbeddingSpec,
    ResolvedEmbedding,
)
from bilm_keras.embedding.replica_runner import ReplicaRunner, resolve_devices
from bilm_keras.embedding.sentence_assembly import batch_outputs
from bilm_keras.embedding.shards import CHUNK_SIZE
from bilm_keras.embedding.token_table import (
    TokenTable,
    batch_positions,
    distinct_tokens,
    embed_tokens,
)
from bilm_keras.layers.recurrence import columns_inside
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.alignment import Alignment

#: Positions per compute batch by default (``batch_size=None``), and
#: sentences at most: ``bench/RESULTS.md`` has the measurements behind them.
COMPUTE_TOKENS = 8192
COMPUTE_SENTENCES = 128


class EmbeddingPlan(NamedTuple):
    """What one call of :meth:`BulkEmbedder.embed_sentences` (or
    ``iter_embeddings``) needs, checked before any sentence is read."""

    #: sentences per LSTM batch, or None for the embedder's compute batches
    batch_size: Optional[int]
    #: the spec, resolved for the backbone's layers
    embedding: ResolvedEmbedding
    #: turns the sentences into the backbone's ids
    batcher: Batcher | ManyLangsBatcher | TokenBatcher


class BulkEmbedder:
    """Embeds many tokenized sentences with a backbone, statelessly.

    Exact, to float32 round-off, to calling the backbone on each sentence
    alone from zero states, and faster:

    1. Every distinct token is embedded once, ``token_chunk_size`` tokens
       per call. The char-CNN and highway layers have no context.
    2. Sentences are sorted by length and cut into compute batches by
       :func:`~bilm_keras.embedding.compute_batches.plan_compute_batches`,
       so almost no padding is computed. By default each batch holds up
       to ``compute_tokens`` positions and ``compute_sentences``
       sentences, many short sentences or fewer long ones. The
       recurrence's per-step matmuls run faster on wider batches, and
       padding costs nothing. Limits of 8,192 / 128 ran as fast as any
       setting measured whose peak memory stays well under the bar of
       ``bench/RESULTS.md``. With an explicit ``batch_size``, batches
       hold that many sentences.
    3. Each batch gathers its rows of that token table and runs only the
       LSTMs, time-major, through the inference-only
       :meth:`LSTMStack.infer_columns`. It has the same weights and
       arithmetic as :meth:`BiLMBackbone.encode` and uses less memory.
       It runs in one traced graph with unknown batch and time, so
       nothing retraces. Each step is one product with the weights on
       the left, ``kernel_t @ [x; h]``, see
       :func:`~bilm_keras.layers.recurrence.run_inference_columns`. A
       batch's rows run longest first as columns, from layer to layer,
       and come back in that layout, the backward LM's in its reading
       order. Nothing is copied between the layers or after them.
    4. Each sentence's array is assembled in numpy from the layers'
       time-major outputs and the token table, only the layers ``output``
       needs. It is reduced as ``output`` asks, and the results come back
       in the order given.

    ``bench/embed_throughput.py`` measures it, see ``bench/RESULTS.md``.
    The parts are modules of their own. The token table is
    :mod:`~bilm_keras.embedding.token_table`, the batches on one device
    or several :mod:`~bilm_keras.embedding.replica_runner`, and each
    sentence's array :mod:`~bilm_keras.embedding.sentence_assembly`.

    The process-wide malloc setting fixes glibc's mmap threshold, so that
    freed blocks go back to the system, see :mod:`bilm_keras.embedding.
    memory`. It is not made here but at the entry points: the facade's
    ``embed_sentences`` / ``iter_embeddings``,
    :func:`~bilm_keras.dump_bilm_embeddings` and ``bilm-keras embed``. A
    program that uses this class alone calls
    :func:`~bilm_keras.embedding.memory.
    return_freed_memory_for_bulk_embedding` itself if it wants it.

    Args:
        backbone: a :class:`BiLMBackbone` holding its weights, built here
            if it is not yet.
        token_chunk_size: int, distinct tokens per call of the token
            embedder in step 1. It bounds the char-CNN's activations: the
            widest convolution holds ``token_chunk_size * 44 * 1024``
            floats at full size.
        compute_tokens: int, positions per compute batch when
            ``batch_size`` is None, counted as sentences x their longest
            length plus 2.
        compute_sentences: int, sentences per compute batch at most when
            ``batch_size`` is None.
        concurrent_directions: bool. False: the backward stack runs after
            the forward one, with half the peak activation memory. True:
            both at once.
        options: the backbone's options, from which the batcher is chosen
            by
            :func:`~bilm_keras.data.batcher_for_options.batcher_for_options`.
            A converted ELMoForManyLangs model needs them for its
            dictionaries. None: :class:`Batcher` for char input or
            :class:`TokenBatcher` for token input.
        devices: the devices the LSTMs run on, as TensorFlow's logical
            device names, e.g. ``["GPU:0", "GPU:1"]``. ``"all"`` or None
            means every GPU, else the CPU. With several, the compute
            batches go ``n_replicas`` at a time, one per device, through a
            ``tf.distribute.MirroredStrategy``. The results are in input
            order, identical to one device's. With one, nothing changes.
        alignment: a cross-lingual
            :class:`~bilm_keras.weights.alignment.Alignment` applied to the
            output layers before they are reduced, or None.

    Example:
        >>> bilm = BidirectionalLanguageModel("options.json", "weights.hdf5")
        >>> embedder = BulkEmbedder(bilm.backbone)
        >>> embedder.embed_sentences([["Hi", "!"], []])[0].shape
        (3, 2, 1024)
    """

    #: the choices of ``output`` in :meth:`embed_sentences`
    OUTPUTS = tuple(EMBEDDING_OUTPUTS)

    def __init__(
        self,
        backbone: BiLMBackbone,
        *,
        token_chunk_size: int = 128,
        compute_tokens: int = COMPUTE_TOKENS,
        compute_sentences: int = COMPUTE_SENTENCES,
        concurrent_directions: bool = False,
        options: BiLMOptions | None = None,
        devices: Sequence[str] | str | None = None,
        alignment: Alignment | None = None,
    ):
        require_eager("BulkEmbedder")
        check_int("token_chunk_size", token_chunk_size, 1)
        check_int("compute_tokens", compute_tokens, 1)
        check_int("compute_sentences", compute_sentences, 1)
        if not isinstance(concurrent_directions, bool):
            raise TypeError(f"concurrent_directions: expected a bool, "
                            f"found {concurrent_directions!r}")
        self.backbone = backbone.build_all()
        self.token_chunk_size = token_chunk_size
        self.compute_tokens = compute_tokens
        self.compute_sentences = compute_sentences
        self.concurrent_directions = concurrent_directions
        self.options = options
        self.alignment = alignment
        if (options is None and backbone.use_character_inputs
                and backbone.token_embedder.has_word_part):
            raise ValueError(
                "options: a backbone with a word part (a converted "
                "ELMoForManyLangs model) needs its options, which name "
                "its char.dic and word.dic, found None")
        self.devices = resolve_devices(devices)
        self._runner = ReplicaRunner(
            self._encode, lambda *args: self.graphs["encode"](*args),
            self.devices)
        self._graphs = None
        self._manylangs_batcher = None  # read once: it needs no vocab_file

    @property
    def n_replicas(self) -> int:
        """Compute batches run at once (one per device)."""
        return self._runner.n_replicas

    # ------------------------------------------------------------ public
    def embed_sentences(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int | None = None,
        vocab_file: str | None = None,
        *,
        spec: EmbeddingSpec = EmbeddingSpec(),
        on_batch: Callable[[int, int], None] | None = None,
    ) -> list[np.ndarray]:
        """Embeds many tokenized sentences, in input order.

        Args:
            sentences: token lists, any iterable, read whole, where
                :meth:`iter_embeddings` streams. A sentence may be empty.
                No sentence gives ``[]``.
            batch_size: None (default): the embedder groups the sentences
                into compute batches of about ``compute_tokens`` positions
                and at most ``compute_sentences`` sentences, the fastest
                grouping. An int: exactly that many sentences per LSTM
                batch, the last one fewer, e.g. to bound memory. Either
                way the results come back in input order and are the same
                to float32 round-off.
            vocab_file: for token input, the vocabulary of the embedding
                file, read by ``TokenBatcher``. Without ``<UNK>`` every
                token must be in it. Optional for char input.
            spec: what each sentence's array holds, an
                :class:`~bilm_keras.embedding.outputs.EmbeddingSpec` of the
                output, its layers, a mix and the dtype. The default is
                every layer, `(L + 1, n_tokens, 2 * projection_dim)`
                float32.
            on_batch: called after each batch with its number of sentences
                and of tokens, e.g. for a progress bar.

        Returns:
            One array per sentence, in the spec's ``dtype``, shaped as
            its ``output`` says.

        Raises:
            SettingError: a bad setting, named, before any sentence is
                read. :class:`~bilm_keras._utils.settings.SettingError` is
                a ``ValueError``.
        """
        if isinstance(sentences, str):
            check_sentences(sentences)  # raises the usual TypeError
        if not isinstance(sentences, Sequence):
            if not isinstance(sentences, Iterable):
                raise TypeError(f"sentences: expected an iterable of token "
                                f"lists, found {type(sentences).__name__}")
            sentences = list(sentences)
        plan = self._plan(batch_size, vocab_file, spec)
        if len(sentences) == 0:
            return []
        check_sentences(sentences)
        return self._embed_chunk(sentences, plan, on_batch)

    def iter_embeddings(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int | None = None,
        vocab_file: str | None = None,
        *,
        spec: EmbeddingSpec = EmbeddingSpec(),
        chunk_size: int = CHUNK_SIZE,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> Iterator[np.ndarray]:
        """:meth:`embed_sentences`, streaming: one array per sentence, in
        input order, reading ``chunk_size`` sentences at a time.

        Memory stays bounded by a chunk whatever the input's length. The
        input is read ``chunk_size`` sentences at a time and each chunk
        goes through :meth:`embed_sentences`'s path. The generator
        releases a result as soon as it has been handed out. Arguments
        are checked when this is called. A bad sentence is reported when
        its chunk is reached, with its index in the whole input.

        Args:
            sentences: any iterable of token lists. A generator over a file
                is read lazily.
            chunk_size: sentences sorted and embedded together. The token
                table and the length sorting work within a chunk.
            batch_size, vocab_file, spec, on_batch: as
                :meth:`embed_sentences`.

        Yields:
            One array per sentence, in the spec's ``dtype``, shaped as its
            ``output`` says.

        Example:
            A share of a large file, shard 3 of 8, as ``bilm-keras embed
            --shard 3/8`` does with
            :func:`bilm_keras.embedding.shards.shard_lines`:

            >>> first, end = shard_lines(3, 8, n_lines, chunk_size=4096)
            >>> with open("corpus.txt", encoding="utf-8") as f:
            ...     lines = itertools.islice(f, first, end)
            ...     for i, vectors in enumerate(embedder.iter_embeddings(
            ...             line.split() for line in lines), first):
            ...         ...  # line i of the file
        """
        check_int("chunk_size", chunk_size, 1)
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(f"sentences: expected an iterable of token "
                            f"lists, found {type(sentences).__name__}")
        plan = self._plan(batch_size, vocab_file, spec)
        return self._iter_chunks(iter(sentences), plan, chunk_size, on_batch)

    def embed_token_table(
        self, batcher: Batcher | ManyLangsBatcher | TokenBatcher,
        tokens: list[str],
    ) -> tf.Tensor:
        """Step 1: ``<S>``, the ``tokens`` and ``</S>`` embedded, one row
        each, ``token_chunk_size`` tokens per call of the token embedder.

        Args:
            batcher: the :class:`Batcher` (char input),
                :class:`ManyLangsBatcher` (a converted ELMoForManyLangs
                model) or :class:`TokenBatcher` (token input) of the
                backbone.
            tokens: distinct tokens.

        Returns:
            `(len(tokens) + 2, projection_dim)` float32.
        """
        return embed_tokens(self.graphs["tokens"], batcher, tokens,
                            self.token_chunk_size)

    def encode(self, table: tf.Tensor, positions, lengths
               ) -> dict[str, list[tf.Tensor]]:
        """Step 3: the LSTMs of one batch, on rows of a token table.

        The outputs stay in the layout the recurrence computes them in,
        see :func:`~bilm_keras.layers.recurrence.run_inference_columns`.
        Rows are columns, and the backward LM's outputs are in its own
        reading order. Row ``b`` of length ``L = n + 2`` has its token ``k``
        (``1..n``) at ``forward[l][k, :, b]`` and at
        ``backward[l][L - 1 - k, :, b]``.

        Args:
            table: `(n_rows, projection_dim)` float32, e.g. from
                :meth:`embed_token_table`.
            positions: `(batch, time)` int32, each position's row of
                ``table``, boundaries included, the rows longest first.
                Padding may be any row.
            lengths: `(batch,)` int32, positions per row with boundaries,
                non-increasing.

        Returns:
            ``{direction: [(time, projection_dim, batch') per LSTM
            layer]}``, where ``batch' = max(batch, 2)``. A batch of one
            gets an empty second column. The outputs are zero past each
            row's length and at the boundary each direction reads last,
            the forward LM's ``</S>`` and the backward LM's ``<S>``. No
            sentence's vectors use those outputs, so their steps are not
            run, 1 of ``n + 2`` steps.

        Raises:
            InvalidArgumentError: ``lengths`` increase somewhere.
        """
        return self.graphs["encode"](table, positions, lengths)

    @property
    def graphs(self) -> dict[str, tf.types.experimental.PolymorphicFunction]:
        """The two traced graphs, built on first use, then kept:

        * ``"tokens"``: ids `(batch, time, ids_width)`, or `(batch, time)`
          for token input, -> `(batch, time, projection_dim)`.
        * ``"encode"``: :meth:`encode`'s ``(table, positions, lengths)``.

        Their ``python_function`` can be traced anew, e.g. with
        ``jit_compile=True`` to time XLA.
        """
        if self._graphs is None:
            backbone = self.backbone
            if backbone.use_character_inputs:
                ids_spec = tf.TensorSpec((None, None, backbone.ids_width),
                                         tf.int32)
            else:
                ids_spec = tf.TensorSpec((None, None), tf.int32)
            self._graphs = {
                "tokens": graph_function(backbone.embed_tokens,
                                          input_signature=[ids_spec]),
                "encode": graph_function(self._encode, input_signature=[
                    tf.TensorSpec((None, backbone.projection_dim),
                                  tf.float32),
                    tf.TensorSpec((None, None), tf.int32),
                    tf.TensorSpec((None,), tf.int32),
                ]),
            }
        return dict(self._graphs)

    # ----------------------------------------------------------- private
    def _plan(self, batch_size, vocab_file, spec: EmbeddingSpec
              ) -> EmbeddingPlan:
        """Checks the arguments of a call and returns what it needs."""
        if not isinstance(spec, EmbeddingSpec):
            raise TypeError(f"spec: expected an EmbeddingSpec, found "
                            f"{type(spec).__name__}")
        check_int("batch_size", batch_size, 1, optional=True)
        embedding = spec.resolve(self.backbone.n_layers)
        if self.alignment is not None:  # mapped before they are reduced
            embedding = embedding._replace(alignment=(
                self.alignment.for_layers(embedding.layer_ids)))
        use_chars = self.backbone.use_character_inputs
        if self.options is not None and self.options.manylangs is not None \
                and use_chars:
            if self._manylangs_batcher is None:
                self._manylangs_batcher = batcher_for_options(self.options)
            batcher = self._manylangs_batcher
        else:
            batcher = batcher_for_options(
                self.options, vocab_file, use_character_inputs=use_chars,
                max_characters_per_token=(
                    self.backbone.max_characters_per_token))
        return EmbeddingPlan(batch_size, embedding, batcher)

    def _iter_chunks(self, sentences, plan, chunk_size, on_batch):
        offset = 0
        while True:
            chunk = list(itertools.islice(sentences, chunk_size))
            if not chunk:
                return
            try:
                check_sentences(chunk)
                results = self._embed_chunk(chunk, plan, on_batch)
            except (TypeError, ValueError) as e:
                # the index in the whole input, not in the chunk
                message = re.sub(
                    r"sentences\[(\d+)\]",
                    lambda m, offset=offset:
                        f"sentences[{int(m.group(1)) + offset}]",
                    str(e), count=1)
                raise type(e)(message) from None
            del chunk
            results.reverse()
            while results:
                yield results.pop()  # the generator keeps no reference
            offset += chunk_size

    def _embed_chunk(self, sentences, plan, on_batch) -> list[np.ndarray]:
        """Steps 1-4 on a checked, non-empty list of sentences."""
        if isinstance(plan.batcher, TokenBatcher):
            # names sentences[i][j] as given, not in the table built below
            plan.batcher.check_in_vocabulary(sentences)
        # 1. one row per distinct token (the batcher's own boundary ids)
        rows = distinct_tokens(sentences)
        table = TokenTable(rows, self.embed_token_table(plan.batcher,
                                                        list(rows)))
        table_rows = np.asarray(table.embeddings)  # (N + 2, P), no copy
        # 2.-4. sorted batches through the LSTMs, n_replicas at a time
        lengths = [len(s) for s in sentences]
        if plan.batch_size is None:  # the embedder's compute batches
            batches = plan_compute_batches(
                lengths, max_sentences=self.compute_sentences,
                max_tokens=self.compute_tokens)
        else:  # the caller's: batch_size sentences each
            batches = plan_compute_batches(
                lengths, max_sentences=plan.batch_size)
        batches = [idx[::-1] for idx in batches]  # longest first (encode)
        results: list[np.ndarray | None] = [None] * len(sentences)
        group = self.n_replicas
        for start in range(0, len(batches), group):
            chunk = batches[start: start + group]
            inputs = [batch_positions(sentences, idx, table) for idx in chunk]
            encoded_batches = self._runner.run(table.embeddings, inputs)
            for idx, (positions, lengths), encoded in zip(
                    chunk, inputs, encoded_batches):
                for i, array in batch_outputs(
                        encoded, self.backbone.directions, sentences, idx,
                        positions, table_rows, plan.embedding):
                    results[i] = array
                del encoded
                if on_batch is not None:
                    on_batch(len(idx), int(lengths.sum()) - 2 * len(idx))
            del encoded_batches
        return results

    def _encode(self, table, positions, lengths):
        """The Python function of the ``"encode"`` graph."""
        # B=batch, T=time with boundaries, P=projection dim
        tf.debugging.assert_non_negative(
            lengths[:-1] - lengths[1:],
            message="lengths: expected the rows longest first")
        # at least two columns (run_inference_columns): a batch of one
        # gets a second row of length 0
        extra = tf.maximum(2 - tf.shape(lengths)[0], 0)
        positions = tf.pad(positions, [[0, extra], [0, 0]])
        lengths = tf.pad(lengths, [[0, extra]])
        x = tf.transpose(tf.gather(table, tf.transpose(positions)),
                         (0, 2, 1))  # (T, P, B')
        # a row's last step (the forward LM's </S>, the backward LM's
        # <S>) gives the one output no sentence's vectors use
        inside = columns_inside(lengths - 1, tf.shape(x)[0])  # (T,)
        outputs = {}
        for direction, stack in self.backbone.stacks.items():
            inputs = x
            if outputs and not self.concurrent_directions:
                # one direction at a time: half the peak memory (and the
                # reversed copy made only once the forward LM is done)
                with tf.control_dependencies([outputs["forward"][-1]]):
                    inputs = tf.identity(inputs)
            if direction == "backward":  # its reading order, kept after
                inputs = tf.reverse_sequence(inputs, lengths, seq_axis=0,
                                             batch_axis=2)
            outputs[direction] = stack.infer_columns(inputs, inside)
        return outputs  # per direction, per layer (T, P, B')
