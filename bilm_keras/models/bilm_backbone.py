"""The biLM backbone: ids -> token embeddings and every LSTM layer's output.

Training (:mod:`bilm_keras.training`), inference
(:class:`~bilm_keras.BidirectionalLanguageModel`), the SavedModel export
and the bulk embedding path all run this one layer's sublayers. Its LSTM
stacks run by one of three paths, tabled in
:mod:`bilm_keras.layers.recurrence`.
"""

import inspect
from typing import Optional

import keras

from bilm_keras._utils.backends import reject_strings
from bilm_keras.layers import precision
from bilm_keras.layers.char_cnn_embedder import CharCNNEmbedder
from bilm_keras.layers.lstm_stack import LSTMStack
from bilm_keras.layers.recurrence import reverse_within_lengths
from bilm_keras.layers.token_embedder import TokenEmbedder
from bilm_keras.options import N_CHARACTERS_WITH_PADDING, BiLMOptions

DIRECTIONS = ("forward", "backward")


@keras.saving.register_keras_serializable(package="bilm_keras")
class BiLMBackbone(keras.layers.Layer):
    """Token embedder plus a forward and (optionally) a backward LSTM stack.

    The architecture comes from constructor arguments only. Use
    :meth:`from_options` to build it from an ``options.json``, and
    :func:`bilm_keras.weights.load_bilm_tf_hdf5` to load weights.

    Args:
        lstm_dim, projection_dim, n_layers, cell_clip, proj_clip,
        use_skip_connections: the LSTM stacks (``lstm`` options).
        use_character_inputs: char-CNN (True) or token-id lookup (False).
        filters, char_embedding_dim, n_highway, activation,
        max_characters_per_token: the char-CNN (``char_cnn`` options).
        n_characters: rows of the character table, padding row included.
        word_embedding_dim, n_words, always_project: an ELMoForManyLangs
            model's word part and projection (:class:`CharCNNEmbedder`).
            Its ids have one more column, the word id (:attr:`ids_width`).
        n_tokens_vocab: tokens in the vocabulary, for token input (the
            token table adds a padding row).
        bidirectional: build the backward stack too.
        dropout: LSTM input dropout in training.

    Call arguments:
        inputs: `(batch, time, ids_width)` char ids or `(batch, time)`
            token ids, +1-shifted with 0 for padding, ``<S>``/``</S>``
            included. ``ids_width`` is max_chars, + 1 for the word id of an
            ELMoForManyLangs model.
        initial_states: ``{"forward": [(c, h), ...], "backward": [...]}``
            (`(batch, lstm_dim)`, `(batch, projection_dim)` per layer) or None
            for zeros.
        training: bool.

    Returns:
        A dict of ``token_embeddings (batch, time, projection_dim)``,
        ``mask (batch, time)`` bool, ``lengths (batch,)`` int32,
        ``forward``, ``backward`` and ``final_states``. ``forward`` and
        ``backward`` are lists of `(batch, time, projection_dim)` per layer
        in natural time order, zero past each row's length.
        ``final_states`` is shaped like ``initial_states``.
    """

    # Many arguments, not an options value, by design: a Keras layer's
    # config is its constructor's arguments (keras-hub's backbones), so
    # that get_config / from_config and .keras files round-trip plain
    # numbers; from_options is the one factory from BiLMOptions, and
    # get_config reads the list from this signature.
    def __init__(
        self,
        lstm_dim,
        projection_dim,
        n_layers=2,
        cell_clip=None,
        proj_clip=None,
        use_skip_connections=False,
        use_character_inputs=True,
        filters=None,
        char_embedding_dim=16,
        n_highway=0,
        activation="relu",
        max_characters_per_token=50,
        n_characters=N_CHARACTERS_WITH_PADDING,
        n_tokens_vocab=None,
        bidirectional=True,
        dropout=0.0,
        word_embedding_dim=0,
        n_words=0,
        always_project=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.lstm_dim = lstm_dim
        self.projection_dim = projection_dim
        self.n_layers = n_layers
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.use_character_inputs = use_character_inputs
        self.filters = None if filters is None else [list(f) for f in filters]
        self.char_embedding_dim = char_embedding_dim
        self.n_highway = n_highway
        self.activation = activation
        self.max_characters_per_token = max_characters_per_token
        self.n_characters = n_characters
        self.n_tokens_vocab = n_tokens_vocab
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.word_embedding_dim = word_embedding_dim
        self.n_words = n_words
        self.always_project = always_project

        if use_character_inputs:
            if not filters:
                raise ValueError("filters: a char-CNN needs at least one")
            self.token_embedder = CharCNNEmbedder(
                filters,
                char_embedding_dim,
                n_highway,
                projection_dim,
                activation=activation,
                n_characters=n_characters,
                max_characters_per_token=max_characters_per_token,
                word_embedding_dim=word_embedding_dim,
                n_words=n_words,
                always_project=always_project,
                name="char_cnn",
                dtype=self.dtype_policy,
            )
        else:
            if not n_tokens_vocab:
                raise ValueError(
                    "n_tokens_vocab: token input needs a vocabulary")
            self.token_embedder = TokenEmbedder(
                n_tokens_vocab, projection_dim, name="token_embedding",
                dtype=self.dtype_policy,
            )
        stack_kwargs = dict(
            units=lstm_dim,
            projection_dim=projection_dim,
            n_layers=n_layers,
            cell_clip=cell_clip,
            proj_clip=proj_clip,
            use_skip_connections=use_skip_connections,
            dropout=dropout,
            # a mixed policy (bilm_keras.layers.precision) reaches every
            # layer; the backbone itself reads its variables as float32
            dtype=self.dtype_policy,
        )
        precision.float32_io(self)
        self.forward_lstm = LSTMStack(name="forward_lstm", **stack_kwargs)
        self.backward_lstm = (
            LSTMStack(name="backward_lstm", **stack_kwargs)
            if bidirectional else None
        )

    @classmethod
    def from_options(
        cls,
        options: BiLMOptions,
        use_character_inputs: Optional[bool] = None,
        n_tokens_vocab: Optional[int] = None,
        dropout: float = 0.0,
        **kwargs,
    ) -> "BiLMBackbone":
        """Builds the backbone an ``options.json`` describes (no weights).

        Args:
            use_character_inputs: default: the options' own (char-CNN when
                ``char_cnn`` is present).
            n_tokens_vocab: tokens in the vocabulary, for token input
                (default: the options' ``n_tokens_vocab``).
        """
        if use_character_inputs is None:
            use_character_inputs = options.use_character_inputs
        if use_character_inputs and options.char_cnn is None:
            raise ValueError(
                "use_character_inputs=True but the options have no "
                "'char_cnn' section"
            )
        lstm = options.lstm
        char_kwargs = {}
        if use_character_inputs:
            cnn = options.char_cnn
            char_kwargs = dict(
                filters=cnn.filters,
                char_embedding_dim=cnn.char_embedding_dim,
                n_highway=cnn.n_highway,
                activation=cnn.activation,
                max_characters_per_token=cnn.max_characters_per_token,
            )
            if options.manylangs is not None:
                # ELMoForManyLangs: its own char table, the word part and
                # the projection upstream always applies
                char_kwargs.update(
                    n_characters=cnn.n_characters,
                    word_embedding_dim=options.manylangs.word_embedding_dim,
                    n_words=options.manylangs.n_words,
                    always_project=True,
                )
        elif n_tokens_vocab is None:
            n_tokens_vocab = options.n_tokens_vocab
        return cls(
            lstm_dim=lstm.dim,
            projection_dim=lstm.projection_dim,
            n_layers=lstm.n_layers,
            cell_clip=lstm.cell_clip,
            proj_clip=lstm.proj_clip,
            use_skip_connections=lstm.use_skip_connections,
            use_character_inputs=use_character_inputs,
            n_tokens_vocab=n_tokens_vocab,
            bidirectional=options.bidirectional,
            dropout=dropout,
            **char_kwargs,
            **kwargs,
        )

    @property
    def stacks(self):
        """``{"forward": LSTMStack, "backward": LSTMStack}`` (as built)."""
        stacks = {"forward": self.forward_lstm}
        if self.backward_lstm is not None:
            stacks["backward"] = self.backward_lstm
        return stacks

    @property
    def directions(self):
        return tuple(self.stacks)

    @property
    def ids_width(self) -> Optional[int]:
        """Ids per token of char input, the last axis: chars, + 1 for an
        ELMoForManyLangs model's word id. None for token input."""
        if not self.use_character_inputs:
            return None
        return self.token_embedder.ids_width

    def build(self, input_shape=None):
        if self.use_character_inputs:
            self.token_embedder.build((None, None, self.ids_width))
        else:
            self.token_embedder.build((None, None))
        for stack in self.stacks.values():
            stack.build((None, None, self.projection_dim))

    def build_all(self):
        """Creates every variable (for loading weights before a call)."""
        if not self.built:
            self.build()
            self.built = True
        return self

    def input_mask(self, inputs):
        """`(batch, time)` bool: positions holding a token, where char
        ids > 0. A word id column is not looked at."""
        if self.use_character_inputs:
            if self.token_embedder.has_word_part:
                inputs = inputs[:, :, : self.max_characters_per_token]
            return keras.ops.any(inputs > 0, axis=2)
        return inputs > 0

    def embed_tokens(self, inputs):
        """Token embeddings `(batch, time, projection_dim)` of ids."""
        return self.token_embedder(inputs)

    def run_direction(
        self, direction, embeddings, lengths, initial_states=None,
        training=False, dropout_seed=None, resets=None,
    ):
        """Runs one stack on embeddings already in that direction's order
        (``dropout_seed``, ``resets``: see :meth:`LSTMStack.call`)."""
        return self.stacks[direction](
            embeddings, lengths, initial_states=initial_states,
            training=training, dropout_seed=dropout_seed, resets=resets,
        )

    def encode(self, token_embeddings, lengths, initial_states=None,
               training=False):
        """LSTM layers of both directions from `(B, T, P)` token embeddings.

        The backward stack reads each row's first ``length`` positions
        reversed. Its outputs are reversed back to natural order.
        """
        initial_states = initial_states or {}
        return self._both_directions(
            token_embeddings, lengths,
            lambda direction, x: self.run_direction(
                direction, x, lengths, initial_states.get(direction),
                training=training))

    def infer(self, token_embeddings, lengths):
        """:meth:`encode`'s layers at inference, through
        :meth:`LSTMStack.infer`, the bulk embedding path: no gradients,
        no final states.

        Returns:
            ``{direction: [(B, T, P) per layer]}``, natural time order.
        """
        def run(direction, x):
            layers = self.stacks[direction].infer(
                keras.ops.transpose(x, (1, 0, 2)), lengths)  # (T, B, P) each
            return [keras.ops.transpose(h, (1, 0, 2)) for h in layers], None

        return self._both_directions(token_embeddings, lengths, run)[0]

    def _both_directions(self, token_embeddings, lengths, run):
        """``run(direction, x) -> (layers, final_state)`` for each
        direction. The backward stack reads each row's first ``length``
        positions reversed, and its layers are reversed back."""
        outputs, final_states = {}, {}
        for direction in self.directions:
            x = token_embeddings
            if direction == "backward":
                x = reverse_within_lengths(x, lengths)
            layers, final_states[direction] = run(direction, x)
            if direction == "backward":
                layers = [reverse_within_lengths(h, lengths) for h in layers]
            outputs[direction] = layers
        return outputs, final_states

    def __call__(self, inputs, *args, **kwargs):
        # before Keras converts the input: JAX and PyTorch have no string
        # tensors, and their conversion error would not say what to do
        reject_strings(self.name, inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, initial_states=None, training=False):
        mask = self.input_mask(inputs)  # (B, T)
        lengths = keras.ops.sum(keras.ops.cast(mask, "int32"), axis=1)  # (B,)
        token_embeddings = self.embed_tokens(inputs)  # (B, T, P)
        outputs, final_states = self.encode(
            token_embeddings, lengths, initial_states, training=training
        )
        return dict(
            token_embeddings=token_embeddings,
            mask=mask,
            lengths=lengths,
            final_states=final_states,
            **outputs,
        )

    def get_config(self):
        config = super().get_config()
        # every constructor argument, read from the attribute of its name
        config.update({name: getattr(self, name)
                       for name in _ARCHITECTURE_ARGUMENTS})
        return config


#: the architecture arguments of :class:`BiLMBackbone`, read from its
#: signature (each is kept as the attribute of its name): written once,
#: in the constructor, not again in ``get_config``
_ARCHITECTURE_ARGUMENTS = tuple(
    name for name, parameter in inspect.signature(
        BiLMBackbone.__init__).parameters.items()
    if name != "self" and parameter.kind is parameter.POSITIONAL_OR_KEYWORD)
