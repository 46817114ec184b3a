"""The training task: :class:`BiLMBackbone` + one softmax + the LM loss."""

from typing import Optional

import keras
import tensorflow as tf

from bilm_keras.layers.dropout import dropout, fold_seed
from bilm_keras.layers.sampled_softmax import SampledSoftmaxLoss
from bilm_keras.layers.training_recurrence import (
    PIPELINE_CHUNK_STEPS,
    run_stacks_unrolled,
)
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.options import BiLMOptions

#: batch-dict key suffix of each direction's stream (see ``LMDataset``)
DIRECTION_SUFFIX = {"forward": "", "backward": "_reverse"}
#: the names :meth:`LanguageModel.from_options` gives the model and its
#: backbone: a training run's checkpoint keys its variables by them
NAME = "language_model"
BACKBONE_NAME = "bilm"


@keras.saving.register_keras_serializable(package="bilm_keras")
class LanguageModel(keras.Model):
    """bilm-tf's ``LanguageModel``: predict the next token in each direction.

    The forward and backward LSTM stacks of the backbone share its token
    embedder and one softmax. In training both get dropout on their inputs,
    inside :class:`LSTMStack`, and on the top layer's output, here. The
    softmax is sampled. The loss is the mean over directions of the mean
    token loss. The backward stream arrives already reversed from
    ``BidirectionalLMDataset``, in keys ending in ``_reverse``. So the
    backward stack reads it as is.

    Args:
        backbone: a :class:`BiLMBackbone` (its ``dropout`` is the input
            dropout).
        n_tokens_vocab: int. Softmax classes (the vocabulary size).
        n_negative_samples: int. Sampled classes per batch in training.
        dropout: float. Dropout on the top LSTM output in training.
        share_embedding_softmax: bool. Use the token embedding table
            (without its padding row) as ``softmax/W``. Token input only.
        seed: int or None. Op seed of the softmax sampler.
        unroll_windows: bool. Run both directions' LSTM stacks statically
            unrolled over the window and batched together, when the window
            length is known at trace time. They get a hand-written backward
            pass (:func:`run_stacks_unrolled`). bilm-tf used ``static_rnn``
            in training. False runs the backbone's length-aware
            ``tf.while_loop`` per direction. The numbers are the same to
            float rounding (:mod:`bilm_keras.layers.recurrence` has the
            LSTM paths).
        window_chunk_steps: int or None. With ``unroll_windows``, the
            layers run as a pipeline over chunks of this many steps, layer
            ``l + 1``'s chunk beside layer ``l``'s next one. None runs each
            layer over the whole window, then the next. The numbers are the
            same. It is a setting for a machine whose cores or caches
            favour another chunk than the default's
            (``bench/train_throughput.py`` times them).
        fused_gates: bool. With ``unroll_windows``, each step's
            elementwise gate math and its gradient run as one XLA kernel.
            False runs plain TensorFlow ops, for a TensorFlow build or
            device without XLA's JIT, or to profile the ops one by one.
            Same numbers to float rounding.
        dedup_tokens: bool. Run the char-CNN once per distinct token of
            the batch, both directions' streams together, and gather. It is
            exact, since a token's embedding has no context. Char input
            only.
        reset_states_at_sentence_start: bool. Zero a row's LSTM states
            where a sentence starts (the batches' ``sentence_start``), in
            training and evaluation. So every sentence is predicted from
            the zero states ELMo embeddings start from. False is bilm-tf's
            training, with states carried across sentences. Its LMs then
            meet zero states only at their first step. They can be badly
            wrong from them, a backward LM most of all, while their
            training perplexity looks normal.

    Call arguments:
        inputs: a batch dict from ``LMDataset``. It holds ``token_ids``
            `(batch, time)` or ``tokens_characters``
            `(batch, time, max_chars)`, +1-shifted. It also holds
            ``next_token_id (batch, time)`` and ``mask (batch, time)``
            float. Each comes also with ``_reverse`` for the backward
            direction.
        initial_states: ``{direction: [(c, h), ...]}`` or None for zeros.
        training: bool.
        dropout_seed: None or a `(2,)` int seed, which the training loop
            passes once a step. Every dropout mask is then a stateless
            function of it, the direction and the layer. So the fast and
            the plain path draw the same masks
            (:mod:`bilm_keras.layers.dropout`). The sampled softmax's
            negative samples are drawn the same way. So a run resumed from
            a checkpoint draws what an uninterrupted one does.

    Returns:
        A dict: ``loss`` () the training loss, ``loss_sum`` and
        ``n_tokens`` `{direction: ()}` (for perplexity over many batches)
        and ``final_states`` shaped like ``initial_states``.
    """

    # Many arguments, not an options value, by design: a Keras layer's
    # config is its constructor's arguments (see BiLMBackbone).
    def __init__(
        self,
        backbone,
        n_tokens_vocab,
        n_negative_samples=8192,
        dropout=0.0,
        share_embedding_softmax=False,
        seed=None,
        unroll_windows=True,
        dedup_tokens=True,
        reset_states_at_sentence_start=True,
        window_chunk_steps=PIPELINE_CHUNK_STEPS,
        fused_gates=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(backbone, dict):
            backbone = keras.saving.deserialize_keras_object(backbone)
        if share_embedding_softmax and backbone.use_character_inputs:
            raise ValueError(
                "share_embedding_softmax=True needs token input; a char-CNN "
                "model has no token table to share (bilm-tf's rule)"
            )
        self.backbone = backbone
        self.n_tokens_vocab = n_tokens_vocab
        self.n_negative_samples = n_negative_samples
        self.dropout = dropout
        self.share_embedding_softmax = share_embedding_softmax
        self.seed = seed
        self.unroll_windows = unroll_windows
        self.dedup_tokens = dedup_tokens
        self.reset_states_at_sentence_start = reset_states_at_sentence_start
        self.window_chunk_steps = window_chunk_steps
        self.fused_gates = fused_gates
        self.softmax = SampledSoftmaxLoss(
            n_tokens_vocab,
            backbone.projection_dim,
            n_negative_samples=n_negative_samples,
            share_weights=share_embedding_softmax,
            seed=seed,
            name="softmax",
        )

    @classmethod
    def from_options(
        cls, options: BiLMOptions, n_tokens_vocab: Optional[int] = None,
        training: bool = True, **kwargs,
    ) -> "LanguageModel":
        """Builds the task an ``options.json`` describes (no weights).

        Args:
            n_tokens_vocab: default ``options.n_tokens_vocab``.
            training: False builds it without dropout (evaluation, export).
        """
        n_tokens_vocab = n_tokens_vocab or options.n_tokens_vocab
        if not n_tokens_vocab:
            raise ValueError(
                "n_tokens_vocab: the options give no vocabulary size "
                "(train_elmo fills it from the vocabulary file)"
            )
        dropout = options.dropout if training else 0.0
        backbone = BiLMBackbone.from_options(
            options,
            n_tokens_vocab=(None if options.use_character_inputs
                            else n_tokens_vocab),
            dropout=dropout,
            name=BACKBONE_NAME,
        )
        return cls(
            backbone,
            n_tokens_vocab,
            n_negative_samples=options.n_negative_samples_batch,
            dropout=dropout,
            share_embedding_softmax=options.share_embedding_softmax,
            **{"name": NAME,
               "reset_states_at_sentence_start": (
                   options.reset_states_at_sentence_start),
               **kwargs},
        )

    @property
    def directions(self):
        return self.backbone.directions

    def build(self, input_shape=None):
        self.backbone.build_all()
        self.softmax.build()

    def build_all(self):
        """Creates every variable (before restoring or distributing)."""
        if not self.built:
            self.build()
            self.built = True
        return self

    def zero_states(self, batch_size):
        """``{direction: [(c, h), ...]}`` of zeros for ``batch_size`` rows."""
        return {
            direction: stack.zero_states(batch_size)
            for direction, stack in self.backbone.stacks.items()
        }

    def _softmax_weights(self):
        if not self.share_embedding_softmax:
            return None
        # the table's row 0 is the padding id of the +1-shifted inputs
        return self.backbone.token_embedder.embeddings[1:]  # (V, P)

    def embed_streams(self, ids_list):
        """Token embeddings of several streams of ids, one list entry each.

        With ``dedup_tokens`` (char input) the char-CNN sees each distinct
        token of all the streams once. Its outputs are gathered back, and
        the gradient of the gather sums the copies' gradients.

        Args:
            ids_list: list of `(batch, time, max_chars)` char ids or
                `(batch, time)` token ids.

        Returns:
            list of `(batch, time, projection_dim)`.
        """
        if not (self.dedup_tokens and self.backbone.use_character_inputs):
            return [self.backbone.embed_tokens(ids) for ids in ids_list]
        # B=batch, T=time, C=max chars, N=tokens of all streams, U=distinct
        n_chars = self.backbone.ids_width  # + 1 with a word id column
        flat = tf.concat(
            [tf.reshape(ids, (-1, n_chars)) for ids in ids_list], axis=0
        )  # (N, C)
        distinct, index = tf.raw_ops.UniqueV2(
            x=flat, axis=tf.constant([0], tf.int64)
        )  # (U, C), (N,)
        embedded = self.backbone.embed_tokens(distinct[None])[0]  # (U, P)
        tokens = tf.gather(embedded, index)  # (N, P)
        sizes = [tf.reduce_prod(tf.shape(ids)[:2]) for ids in ids_list]
        return [
            tf.reshape(part, tf.concat([tf.shape(ids)[:2], [-1]], axis=0))
            for part, ids in zip(tf.split(tokens, sizes), ids_list)
        ]  # each (B, T, P)

    def call(self, inputs, initial_states=None, training=False,
             dropout_seed=None):
        # B=batch, T=time (unroll_steps), C=max chars, P=projection dim
        input_key = (
            "tokens_characters" if self.backbone.use_character_inputs
            else "token_ids"
        )
        initial_states = initial_states or {}
        # direction k's masks: layer l's input fold_seed(seed, k, l), the
        # top output's fold_seed(seed, k, n_layers); its softmax samples
        # fold_seed(seed, k, n_layers + 1)
        # zero states where a sentence starts (batches without the key:
        # states carried throughout)
        resets = None
        if (self.reset_states_at_sentence_start
                and "sentence_start" in inputs):
            resets = [inputs["sentence_start" + DIRECTION_SUFFIX[d]]
                      for d in self.directions]  # per direction (B, T)
        seeds = None if dropout_seed is None else [
            fold_seed(dropout_seed, k) for k in range(len(self.directions))]
        all_embeddings = self.embed_streams(
            [inputs[input_key + DIRECTION_SUFFIX[d]] for d in self.directions]
        )  # per direction (B, T, P)
        # the LSTM stacks; training windows are full: every row runs all T
        if self.unroll_windows and all_embeddings[0].shape[1] is not None:
            # statically unrolled, both directions batched together
            ran = run_stacks_unrolled(
                [self.backbone.stacks[d] for d in self.directions],
                all_embeddings,
                [initial_states.get(d) for d in self.directions],
                training=training, dropout_seeds=seeds, resets=resets,
                chunk_steps=self.window_chunk_steps,
                fused_gates=self.fused_gates,
            )
        else:
            lengths = tf.fill(tf.shape(all_embeddings[0])[:1],
                              tf.shape(all_embeddings[0])[1])
            ran = [
                self.backbone.run_direction(
                    d, embeddings, lengths, initial_states.get(d),
                    training=training,
                    dropout_seed=None if seeds is None else seeds[k],
                    resets=None if resets is None else resets[k],
                )
                for k, (d, embeddings) in enumerate(
                    zip(self.directions, all_embeddings))
            ]
        loss_sum, n_tokens, final_states, mean_losses = {}, {}, {}, []
        for k, (direction, (layers, states)) in enumerate(
                zip(self.directions, ran)):
            suffix = DIRECTION_SUFFIX[direction]
            targets = inputs["next_token_id" + suffix]  # (B, T)
            mask = tf.cast(inputs["mask" + suffix], tf.float32)  # (B, T)
            final_states[direction] = states
            top = layers[-1]  # (B, T, P)
            if training and self.dropout > 0:
                top = dropout(top, self.dropout, None if seeds is None else
                              fold_seed(seeds[k], len(layers)))
            token_losses = self.softmax(
                top, targets, training=training,
                softmax_weights=self._softmax_weights(),
                sample_seed=None if seeds is None else fold_seed(
                    seeds[k], len(layers) + 1),
            )  # (B, T)
            loss_sum[direction] = tf.reduce_sum(token_losses * mask)
            n_tokens[direction] = tf.reduce_sum(mask)
            mean_losses.append(
                loss_sum[direction] / tf.maximum(n_tokens[direction], 1.0)
            )
        return dict(
            loss=tf.add_n(mean_losses) / len(mean_losses),
            loss_sum=loss_sum,
            n_tokens=n_tokens,
            final_states=final_states,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            backbone=keras.saving.serialize_keras_object(self.backbone),
            n_tokens_vocab=self.n_tokens_vocab,
            n_negative_samples=self.n_negative_samples,
            dropout=self.dropout,
            share_embedding_softmax=self.share_embedding_softmax,
            seed=self.seed,
            unroll_windows=self.unroll_windows,
            dedup_tokens=self.dedup_tokens,
            reset_states_at_sentence_start=(
                self.reset_states_at_sentence_start),
            window_chunk_steps=self.window_chunk_steps,
            fused_gates=self.fused_gates,
        )
        return config
