"""Inference facade with bilm-tf's constructor: options + HDF5 weights."""

from __future__ import annotations

import itertools
import os
import re
from typing import (
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
)

import h5py
import numpy as np
import tensorflow as tf

from bilm_keras.data.batcher import Batcher, TokenBatcher, check_sentences
from bilm_keras.embedding_outputs import (
    EMBEDDING_OUTPUTS,
    embedding_layer_ids,
    reduce_layers,
)
from bilm_keras.memory import return_freed_memory_for_bulk_embedding
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_hdf5 import WeightFileError, load_bilm_tf_hdf5


def lm_layers(outputs: dict) -> tf.Tensor:
    """Stacks the backbone's layers: `(batch, n_layers + 1, time, dim)`.

    Layer 0 is the token embedding, duplicated for both directions; layer
    ``l`` concatenates the forward and backward outputs of LSTM layer ``l``.
    ``dim`` is ``2 * projection_dim`` (``projection_dim`` for a
    unidirectional model).
    """
    directions = [d for d in ("forward", "backward") if d in outputs]
    tok = outputs["token_embeddings"]
    layers = [tf.concat([tok] * len(directions), axis=-1)]
    for i in range(len(outputs["forward"])):
        layers.append(tf.concat([outputs[d][i] for d in directions], axis=-1))
    return tf.stack(layers, axis=1)


def strip_boundaries(layers: tf.Tensor, lengths: tf.Tensor):
    """Drops ``<S>``/``</S>``: `(B, L, T + 2, D)` -> `(B, L, T, D)`.

    ``lengths`` counts the boundaries; positions past a row's last real
    token come back as zeros (bilm-tf left arbitrary values there).

    Returns:
        ``(embeddings, lengths_without_boundaries, mask (B, T) bool)``.
    """
    lengths = tf.maximum(lengths - 2, 0)
    inner = layers[:, :, 1:-1]  # (B, L, T, D)
    mask = tf.sequence_mask(lengths, tf.shape(inner)[2])  # (B, T)
    inner = inner * tf.cast(mask, inner.dtype)[:, None, :, None]
    return inner, lengths, mask


class BidirectionalLanguageModel:
    """A pretrained biLM loaded from bilm-tf files, ready to embed.

    Args:
        options_file: bilm-tf ``options.json``.
        weight_file: bilm-tf ``lm_weights.hdf5``.
        use_character_inputs: char ids (True) or token ids (False) in.
        embedding_weight_file: for token input, the HDF5 file of
            :func:`~bilm_keras.dump_token_embeddings` (dataset
            ``embedding``).
        stateful: False (default): every call starts from zero states, so a
            sentence always gets the same vectors. True: bilm-tf's behaviour
            — row ``k``'s final LSTM states start row ``k`` of the next call;
            rows past the batch keep theirs.
        max_batch_size: rows of the stateful state buffers.

    Calling it on ids (`(batch, time + 2, max_chars)` from :class:`Batcher`
    or `(batch, time + 2)` from :class:`TokenBatcher`, numpy or tensor)
    returns a dict:

    * ``lm_embeddings``: `(batch, n_lm_layers + 1, time, 2 * projection_dim)`,
      ``<S>``/``</S>`` removed, zero past each row's length;
    * ``mask``: `(batch, time)` bool; ``lengths``: `(batch,)` int32;
    * ``token_embeddings``: `(batch, time + 2, projection_dim)`.

    Example:
        >>> bilm = BidirectionalLanguageModel("options.json", "weights.hdf5")
        >>> ids = Batcher("vocab.txt", 50).batch_sentences([["Hi", "!"]])
        >>> bilm(ids)["lm_embeddings"].shape
        TensorShape([1, 3, 2, 1024])
    """

    def __init__(
        self,
        options_file: str | os.PathLike,
        weight_file: str | os.PathLike,
        use_character_inputs: bool = True,
        embedding_weight_file: Optional[str | os.PathLike] = None,
        stateful: bool = False,
        max_batch_size: int = 128,
    ):
        options = BiLMOptions.from_json(options_file)
        vocab_size = None
        if not use_character_inputs:
            if embedding_weight_file is None:
                raise ValueError(
                    "use_character_inputs=False needs embedding_weight_file "
                    "(write one with dump_token_embeddings)"
                )
            vocab_size = _embedding_rows(embedding_weight_file) + 1
        backbone = BiLMBackbone.from_options(
            options,
            use_character_inputs=use_character_inputs,
            vocab_size=vocab_size,
            name="bilm",
        )
        # built by the loader, without random initial values
        load_bilm_tf_hdf5(backbone, weight_file, embedding_weight_file)
        self.__init_from_backbone(backbone, stateful, max_batch_size)

    @classmethod
    def from_backbone(
        cls, backbone: BiLMBackbone, stateful: bool = False,
        max_batch_size: int = 128,
    ) -> "BidirectionalLanguageModel":
        """Wraps a backbone already in memory (trained, or random)."""
        self = cls.__new__(cls)
        self.__init_from_backbone(backbone.build_all(), stateful,
                                  max_batch_size)
        return self

    def __init_from_backbone(self, backbone, stateful, max_batch_size):
        self.backbone = backbone
        self.stateful = stateful
        self.max_batch_size = max_batch_size
        self.use_character_inputs = backbone.use_character_inputs
        if backbone.use_character_inputs:
            spec = tf.TensorSpec(
                (None, None, backbone.max_characters_per_token), tf.int32
            )
        else:
            spec = tf.TensorSpec((None, None), tf.int32)
        self.input_spec = spec
        self._states = None
        if stateful:
            self._states = {
                direction: [
                    (
                        tf.Variable(tf.zeros((max_batch_size, cell.units)),
                                    trainable=False),
                        tf.Variable(tf.zeros((max_batch_size,
                                              cell.output_dim)),
                                    trainable=False),
                    )
                    for cell in stack.cells
                ]
                for direction, stack in backbone.stacks.items()
            }
        self.trace_count = 0
        self._call_fn = tf.function(self._call, input_signature=[spec])

    # ----------------------------------------------------------- the graph
    def _call(self, ids):
        self.trace_count += 1  # runs once per trace, not per call
        batch = tf.shape(ids)[0]
        initial = None
        if self._states is not None:
            initial = {
                d: [(c[:batch], h[:batch]) for c, h in layers]
                for d, layers in self._states.items()
            }
        out = self.backbone(ids, initial_states=initial)
        if self._states is not None:
            for d, layers in self._states.items():
                for (c_var, h_var), (c, h) in zip(
                    layers, out["final_states"][d]
                ):
                    c_var.assign(tf.concat([c, c_var[batch:]], axis=0))
                    h_var.assign(tf.concat([h, h_var[batch:]], axis=0))
        lm_embeddings, lengths, mask = strip_boundaries(
            lm_layers(out), out["lengths"]
        )
        return {
            "lm_embeddings": lm_embeddings,
            "lengths": lengths,
            "mask": mask,
            "token_embeddings": out["token_embeddings"],
        }

    def __call__(self, ids) -> Dict[str, tf.Tensor]:
        ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            raise TypeError(f"ids: expected an integer tensor, found "
                            f"{ids.dtype.name}")
        expected_rank = self.input_spec.shape.rank
        if ids.shape.rank != expected_rank:
            layout = ("(batch, time, max_chars)" if expected_rank == 3
                      else "(batch, time)")
            raise ValueError(
                f"ids: expected rank {expected_rank} {layout}, found shape "
                f"{tuple(ids.shape)}"
            )
        if expected_rank == 3 and ids.shape[2] != self.input_spec.shape[2]:
            raise ValueError(
                f"ids: expected {self.input_spec.shape[2]} characters per "
                f"token (max_characters_per_token), found {ids.shape[2]}"
            )
        if ids.shape[0] == 0:
            raise ValueError("ids: expected at least one sentence, found 0")
        if self.stateful and ids.shape[0] > self.max_batch_size:
            raise ValueError(
                f"ids: batch of {ids.shape[0]} rows exceeds max_batch_size="
                f"{self.max_batch_size} of this stateful model"
            )
        return self._call_fn(tf.cast(ids, tf.int32))

    def reset_states(self) -> None:
        """Zeroes the stateful buffers (no-op when stateless)."""
        for layers in (self._states or {}).values():
            for c, h in layers:
                c.assign(tf.zeros_like(c))
                h.assign(tf.zeros_like(h))

    @property
    def states(self):
        """``{direction: [(c, h), ...]}`` state variables (stateful only)."""
        return self._states

    # ------------------------------------------------------ bulk embedding
    #: Distinct tokens per call of the token embedder in
    #: :meth:`embed_sentences` (bounds the char-CNN's activations: the widest
    #: convolution holds ``chunk * 44 * 1024`` floats at full size).
    embed_chunk_size = 128

    #: the choices of ``output`` in :meth:`embed_sentences`
    OUTPUTS = tuple(EMBEDDING_OUTPUTS)

    def embed_sentences(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int = 32,
        vocab_file: Optional[str] = None,
        *,
        output: str = "all",
        layers: Optional[Sequence[int]] = None,
        on_batch: Optional[Callable[[int, int], None]] = None,
    ) -> List[np.ndarray]:
        """Embeds many tokenized sentences, statelessly, in input order.

        The fast path, exact (to float32 round-off) to calling the model on
        each sentence alone, stateless:

        1. every distinct token is embedded once (the char-CNN and highway
           layers have no context), in chunks of ``embed_chunk_size``;
        2. sentences are sorted by length and cut into batches of
           ``batch_size``, so almost no padding is computed;
        3. each batch gathers its rows of that token table and runs only the
           LSTMs, time-major, one direction after the other, through the
           inference-only :meth:`LSTMStack.infer` (the same weights and
           arithmetic as :meth:`BiLMBackbone.encode`, less memory), in one
           traced graph with unknown batch and time, so nothing retraces;
           the input contributions are computed a block of steps at a time
           (``LSTMStack.inference_block_steps``), which bounds the largest
           buffer;
        4. each sentence's array is assembled in numpy from the layers'
           time-major outputs and the token table (only the layers
           ``output`` needs), reduced as ``output`` asks, and the results
           come back in the order given.

        ``bench/embed_throughput.py`` measures it (full-size model, 2-core
        CPU: see ``bench/README.md``). The first call fixes glibc's mmap
        threshold for the process (:mod:`bilm_keras.memory`: freed blocks
        go back to the system; not when ``MALLOC_MMAP_THRESHOLD_`` is set).

        A stateful model is not touched: its states stay as they were.

        Args:
            sentences: token lists (a sentence may be empty); any iterable
                (read whole: :meth:`iter_embeddings` streams). No sentence
                gives ``[]``.
            batch_size: sentences per LSTM batch.
            vocab_file: for token input, the vocabulary of the embedding
                file (``TokenBatcher``; without ``<UNK>`` every token must be
                in it). Optional for char input.
            output: what each sentence's array holds (``L`` = LSTM layers,
                ``D`` = ``2 * projection_dim``; AllenNLP's ``elmo``
                command and TF-Hub's ``default`` output):

                * ``"all"``: every layer, `(L + 1, n_tokens, D)` (or the
                  ``layers`` chosen, in their order: `(len(layers),
                  n_tokens, D)`);
                * ``"top"``: the top LSTM layer, `(n_tokens, D)`;
                * ``"average"``: the mean of the layers (of ``layers``),
                  `(n_tokens, D)`;
                * ``"sentence_mean"``: that mean averaged over the tokens
                  too, `(D,)` (zeros for a sentence of no tokens) — TF-Hub
                  ELMo's ``default`` with an untrained, equal mix.
            layers: the layers to keep (``"all"``) or to average
                (``"average"``, ``"sentence_mean"``), 0 = token layer,
                ``L`` = top; default all. Not with ``"top"``.
            on_batch: called after each batch with its number of sentences
                and of tokens (a progress bar).

        Returns:
            One float32 array per sentence, shaped as ``output`` says.
        """
        if isinstance(sentences, str):
            check_sentences(sentences)  # raises the usual TypeError
        if not isinstance(sentences, Sequence):
            if not isinstance(sentences, Iterable):
                raise TypeError(f"sentences: expected an iterable of token "
                                f"lists, found {type(sentences).__name__}")
            sentences = list(sentences)
        plan = self._embedding_plan(batch_size, vocab_file, output, layers)
        if len(sentences) == 0:
            return []
        check_sentences(sentences)
        return self._embed_chunk(sentences, plan, on_batch)

    def iter_embeddings(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int = 32,
        vocab_file: Optional[str] = None,
        *,
        output: str = "all",
        layers: Optional[Sequence[int]] = None,
        chunk_size: int = 4096,
        on_batch: Optional[Callable[[int, int], None]] = None,
    ) -> Iterator[np.ndarray]:
        """:meth:`embed_sentences`, streaming: one array per sentence, in
        input order, reading ``chunk_size`` sentences at a time.

        Memory stays bounded by a chunk whatever the input's length: the
        input is read ``chunk_size`` sentences at a time, each chunk goes
        through :meth:`embed_sentences`'s path, and a result is released
        by the generator as soon as it has been handed out. Arguments are
        checked when this is called; a bad sentence is reported when its
        chunk is reached, with its index in the whole input.

        Args:
            sentences: any iterable of token lists (a generator over a file
                is read lazily).
            chunk_size: sentences sorted and embedded together (the token
                table and the length sorting work within a chunk).
            batch_size, vocab_file, output, layers, on_batch: as
                :meth:`embed_sentences`.

        Yields:
            One float32 array per sentence, shaped as ``output`` says.
        """
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) \
                or chunk_size < 1:
            raise ValueError(f"chunk_size: expected a positive integer, "
                             f"found {chunk_size!r}")
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(f"sentences: expected an iterable of token "
                            f"lists, found {type(sentences).__name__}")
        plan = self._embedding_plan(batch_size, vocab_file, output, layers)
        return self._iter_chunks(iter(sentences), plan, chunk_size, on_batch)

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
                    lambda m: f"sentences[{int(m.group(1)) + offset}]",
                    str(e), count=1)
                raise type(e)(message) from None
            del chunk
            results.reverse()
            while results:
                yield results.pop()  # the generator keeps no reference
            offset += chunk_size

    def _embedding_plan(self, batch_size, vocab_file, output, layers) -> dict:
        """Checks the arguments of the bulk path; returns what it needs."""
        return_freed_memory_for_bulk_embedding()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) \
                or batch_size < 1:
            raise ValueError(f"batch_size: expected a positive integer, "
                             f"found {batch_size!r}")
        layer_ids = embedding_layer_ids(layers, self.backbone.n_layers,
                                        output)
        if self.use_character_inputs:
            batcher = Batcher(vocab_file,
                              self.backbone.max_characters_per_token)
        else:
            if vocab_file is None:
                raise ValueError("vocab_file: token input needs the "
                                 "vocabulary of the embedding file")
            batcher = TokenBatcher(vocab_file)
        return dict(batch_size=batch_size, output=output,
                    layer_ids=layer_ids, batcher=batcher)

    def _embed_chunk(self, sentences, plan, on_batch) -> List[np.ndarray]:
        """Steps 1-4 of :meth:`embed_sentences` on a checked, non-empty
        list of sentences."""
        batch_size = plan["batch_size"]
        if isinstance(plan["batcher"], TokenBatcher):
            # names sentences[i][j] as given, not in the table built below
            plan["batcher"].check_in_vocabulary(sentences)
        # 1. one row per distinct token: row 0 <S>, rows 1..N the tokens in
        # order of first appearance, row N + 1 </S> (the batcher's own ids)
        rows: Dict[str, int] = {}
        for sentence in sentences:
            for token in sentence:
                if token not in rows:
                    rows[token] = len(rows) + 1
        table = self._token_table(plan["batcher"], list(rows))  # (N + 2, P)
        eos = len(rows) + 1
        # 2.-4. sorted batches through the LSTMs
        fns = self._embed_fns()
        table_rows = table.numpy()  # (N + 2, P)
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        results: List[Optional[np.ndarray]] = [None] * len(sentences)
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            n_max = max(len(sentences[i]) for i in idx)
            # padding gathers row 0; the LSTMs ignore it (lengths)
            positions = np.zeros((len(idx), n_max + 2), np.int32)  # (B, T+2)
            lengths = np.empty((len(idx),), np.int32)
            for row, i in enumerate(idx):
                n = len(sentences[i])
                positions[row, 1: n + 1] = [rows[t] for t in sentences[i]]
                positions[row, n + 1] = eos
                lengths[row] = n + 2
            encoded = fns["encode"](table, positions, lengths)
            layers = [[h.numpy() for h in encoded[direction]]
                      for direction in self.backbone.directions
                      ]  # per direction, per LSTM layer (T + 2, B, P)
            for row, i in enumerate(idx):
                n = len(sentences[i])
                results[i] = _sentence_output(
                    table_rows[positions[row, 1: n + 1]],
                    [[h[1: n + 1, row] for h in direction]
                     for direction in layers],
                    plan["layer_ids"], plan["output"],
                )
            del encoded, layers
            if on_batch is not None:
                on_batch(len(idx), int(lengths.sum()) - 2 * len(idx))
        return results

    def _token_table(self, batcher, tokens: List[str]) -> tf.Tensor:
        """`(len(tokens) + 2, projection_dim)`: <S>, tokens, </S> embedded."""
        ids = batcher.batch_sentences([tokens])[0]  # (N + 2[, C])
        ids = ids[:, None]  # (N + 2, 1[, C]): each token its own row
        fn = self._embed_fns()["tokens"]
        chunk = self.embed_chunk_size
        parts = [
            fn(tf.constant(ids[i: i + chunk], tf.int32))[:, 0]  # (n, P)
            for i in range(0, len(ids), chunk)
        ]
        return tf.concat(parts, axis=0)

    def _embed_fns(self):
        """The two traced graphs of :meth:`embed_sentences` (built once)."""
        fns = getattr(self, "_embed_fns_cache", None)
        if fns is None:
            backbone = self.backbone
            dim = backbone.projection_dim

            def encode(table, positions, lengths):
                # B=batch, T=time with boundaries, P=projection dim
                x = tf.gather(table, tf.transpose(positions))  # (T, B, P)
                outputs = {}
                for direction, stack in backbone.stacks.items():
                    inputs = x
                    if direction == "backward":
                        inputs = tf.reverse_sequence(x, lengths, seq_axis=0,
                                                     batch_axis=1)
                    if outputs and not _CONCURRENT_DIRECTIONS:
                        # one direction at a time: half the peak memory
                        with tf.control_dependencies([outputs["forward"][-1]]):
                            inputs = tf.identity(inputs)
                    layers = stack.infer(inputs, lengths)  # [(T, B, P)]
                    if direction == "backward":
                        layers = [
                            tf.reverse_sequence(h, lengths, seq_axis=0,
                                                batch_axis=1)
                            for h in layers
                        ]
                    outputs[direction] = layers
                return outputs  # per direction, per layer (T, B, P)

            fns = self._embed_fns_cache = dict(
                tokens=tf.function(
                    backbone.embed_tokens, input_signature=[self.input_spec]
                ),
                encode=tf.function(encode, input_signature=[
                    tf.TensorSpec((None, dim), tf.float32),
                    tf.TensorSpec((None, None), tf.int32),
                    tf.TensorSpec((None,), tf.int32),
                ]),
            )
        return fns


def _sentence_layers(token_embeddings, lstm_layers, layer_ids) -> np.ndarray:
    """One sentence's layers, as :func:`lm_layers` lays them out.

    Args:
        token_embeddings: `(n, P)`.
        lstm_layers: per direction, per LSTM layer `(n, P)`.
        layer_ids: the layers to build, in this order (0 = token layer,
            ``l`` = LSTM layer ``l``).

    Returns:
        `(len(layer_ids), n, n_directions * P)` float32: layer 0 the token
        embedding once per direction, layer ``l`` the directions' outputs
        of LSTM layer ``l`` side by side.
    """
    n, dim = token_embeddings.shape
    out = np.empty((len(layer_ids), n, len(lstm_layers) * dim), np.float32)
    for d, direction in enumerate(lstm_layers):
        columns = slice(d * dim, (d + 1) * dim)
        for k, layer in enumerate(layer_ids):
            out[k, :, columns] = (token_embeddings if layer == 0
                                  else direction[layer - 1])
    return out


def _sentence_output(token_embeddings, lstm_layers, layer_ids,
                     output) -> np.ndarray:
    """One sentence's result of :meth:`~BidirectionalLanguageModel.
    embed_sentences`: its layers (:func:`_sentence_layers`) reduced as
    ``output`` asks."""
    layers = _sentence_layers(token_embeddings, lstm_layers, layer_ids)
    return reduce_layers(layers, output)


#: Run the forward and backward stacks of :meth:`embed_sentences` at once
#: (True) or one after the other (False: half the peak activation memory;
#: on 2 cores at least as fast, see ``bench/embed_throughput.py --levers``).
#: Read when the graph is traced.
_CONCURRENT_DIRECTIONS = False


def _embedding_rows(embedding_weight_file) -> int:
    path = os.fspath(embedding_weight_file)
    if not os.path.exists(path):
        raise WeightFileError(f"{path}: embedding weight file not found")
    with h5py.File(path, "r") as fin:
        ds = fin.get("embedding")
        if not isinstance(ds, h5py.Dataset) or len(ds.shape) != 2:
            raise WeightFileError(
                f"{path}: expected a 2-D dataset 'embedding' "
                f"(n_tokens, dim), found "
                f"{'none' if ds is None else getattr(ds, 'shape', ds)}"
            )
        return int(ds.shape[0])
