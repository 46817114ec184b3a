"""An independent, pure-numpy forward pass of bilm-tf's bidirectional LM.

This module is ground truth for the tests: it shares no code with
``bilm_keras`` and follows bilm-tf (``bilm/model.py``, ``bilm/data.py``) one
operation at a time, in float32 or float64, so it can check paths that the
fixture model does not exercise (skip connections, tanh activation, random
weights, stateful batches, token input, ``weight_layers``).

Dimension legend used throughout:

    B  batch size
    T  number of tokens of the longest sentence (without BOS/EOS);
       arrays that include BOS/EOS have T + 2 positions
    C  max characters per token (``max_characters_per_token``)
    E  character embedding dim (``char_cnn.embedding.dim``)
    F  total number of CNN filters (sum of the filter counts)
    P  LSTM projection dim (``lstm.projection_dim``); token embeddings are P
    H  LSTM cell dim (``lstm.dim``)
    L  number of LSTM layers (``lstm.n_layers``)
    D  2 * P, the dim of one biLM layer (forward concat backward)

Weights are a flat ``dict`` keyed by the bilm-tf HDF5 dataset names
(``char_embed``, ``CNN/W_cnn_0``, ``RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0``
...). ``char_embed`` is stored WITHOUT the padding row, exactly as in the
HDF5 file; the padding row is prepended here.
"""

from __future__ import annotations

import os

import numpy as np

# ---------------------------------------------------------------------------
# Character / token ids (bilm/data.py)
# ---------------------------------------------------------------------------

BOS_CHAR = 256  # <begin sentence>
EOS_CHAR = 257  # <end sentence>
BOW_CHAR = 258  # <begin word>
EOW_CHAR = 259  # <end word>
PAD_CHAR = 260  # <padding>


def word_char_ids(word: str, max_characters_per_token: int) -> np.ndarray:
    """Char ids of one token, UNshifted (0..260), shape ``(C,)``.

    ``[BOW, utf-8 bytes truncated to C - 2, EOW, PAD, PAD, ...]``. The
    sentence markers ``<S>`` / ``</S>`` map to ``[BOW, BOS|EOS, EOW, PAD...]``.
    """
    code = np.full((max_characters_per_token,), PAD_CHAR, dtype=np.int32)
    code[0] = BOW_CHAR
    if word == "<S>":
        code[1] = BOS_CHAR
        code[2] = EOW_CHAR
        return code
    if word == "</S>":
        code[1] = EOS_CHAR
        code[2] = EOW_CHAR
        return code
    encoded = word.encode("utf-8", "ignore")[: max_characters_per_token - 2]
    for k, byte in enumerate(encoded, start=1):
        code[k] = byte
    code[len(encoded) + 1] = EOW_CHAR
    return code


def _tokenize(sentences) -> list[list[str]]:
    return [s.split() if isinstance(s, str) else list(s) for s in sentences]


def sentence_char_ids(sentences, max_characters_per_token: int) -> np.ndarray:
    """Batched char ids as bilm-tf's ``Batcher`` makes them.

    Args:
        sentences: list of B sentences, each a whitespace-tokenized string or
            a list of token strings.
        max_characters_per_token: C.

    Returns:
        int32 ``(B, T + 2, C)``: ``<S> tokens </S>`` per row, every id shifted
        by +1 so that 0 means padding; rows shorter than T are zero-padded.
    """
    tokenized = _tokenize(sentences)
    max_len = max(len(t) for t in tokenized)
    out = np.zeros((len(tokenized), max_len + 2, max_characters_per_token),
                   dtype=np.int32)
    for b, tokens in enumerate(tokenized):
        words = ["<S>"] + tokens + ["</S>"]
        for t, word in enumerate(words):
            out[b, t] = word_char_ids(word, max_characters_per_token) + 1
    return out


def sentence_token_ids(sentences, vocab: list[str]) -> np.ndarray:
    """Batched token ids as bilm-tf's ``TokenBatcher`` makes them.

    ``vocab`` is the list of words (line order of the vocab file) and must
    contain ``<S>``, ``</S>`` and ``<UNK>``. Returns int32 ``(B, T + 2)``,
    ``vocab index + 1`` (0 = padding).
    """
    index = {w: i for i, w in enumerate(vocab)}
    unk = index["<UNK>"]
    tokenized = _tokenize(sentences)
    max_len = max(len(t) for t in tokenized)
    out = np.zeros((len(tokenized), max_len + 2), dtype=np.int32)
    for b, tokens in enumerate(tokenized):
        ids = ([index["<S>"]] + [index.get(w, unk) for w in tokens]
               + [index["</S>"]])
        out[b, : len(ids)] = np.asarray(ids) + 1
    return out


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------


def lstm_prefix(direction: int, layer: int) -> str:
    """HDF5 group of one LSTM cell; direction 0 = forward, 1 = backward."""
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def load_hdf5_weights(path) -> dict[str, np.ndarray]:
    """Every dataset of a bilm-tf ``lm_weights.hdf5``, keyed by its path."""
    import h5py

    weights: dict[str, np.ndarray] = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            weights[name] = np.asarray(obj[...])

    with h5py.File(path, "r") as fin:
        fin.visititems(visit)
    return weights


def _n_filters(options: dict) -> int:
    return sum(num for _, num in options["char_cnn"]["filters"])


def random_bilm_weights(
    options: dict, seed: int, n_characters: int = 261
) -> dict[str, np.ndarray]:
    """Random float32 weights with bilm-tf's HDF5 names and shapes.

    Scales follow bilm-tf's initialisers (so activations are not saturated),
    but biases are small random values instead of zeros so that every bias
    path is exercised. ``n_characters`` is the row count of ``char_embed`` in
    the file (the padding row is NOT included, hence 261 by default).
    """
    rng = np.random.default_rng(seed)
    cnn = options["char_cnn"]
    lstm = options["lstm"]
    E = cnn["embedding"]["dim"]
    F = _n_filters(options)
    P = lstm["projection_dim"]
    H = lstm["dim"]
    w: dict[str, np.ndarray] = {}

    def normal(shape, std):
        return rng.normal(0.0, std, size=shape)

    w["char_embed"] = rng.uniform(-1.0, 1.0, size=(n_characters, E))
    for i, (width, num) in enumerate(cnn["filters"]):
        if cnn["activation"] == "relu":
            kernel = normal((1, width, E, num), np.sqrt(1.0 / (width * E)))
        else:
            # bilm-tf uses uniform(-0.05, 0.05) for tanh; a wider range keeps
            # the tanh path away from its linear regime in tests.
            kernel = rng.uniform(-0.5, 0.5, size=(1, width, E, num))
        w[f"CNN/W_cnn_{i}"] = kernel
        w[f"CNN/b_cnn_{i}"] = normal((num,), 0.1)
    for k in range(cnn.get("n_highway", 0) or 0):
        w[f"CNN_high_{k}/W_carry"] = normal((F, F), np.sqrt(1.0 / F))
        w[f"CNN_high_{k}/b_carry"] = -2.0 + normal((F,), 0.1)
        w[f"CNN_high_{k}/W_transform"] = normal((F, F), np.sqrt(1.0 / F))
        w[f"CNN_high_{k}/b_transform"] = normal((F,), 0.1)
    if F != P:
        w["CNN_proj/W_proj"] = normal((F, P), np.sqrt(1.0 / F))
        w["CNN_proj/b_proj"] = normal((P,), 0.1)
    for direction in (0, 1):
        for layer in range(lstm["n_layers"]):
            prefix = lstm_prefix(direction, layer)
            fan_in = P + P  # layer input (P) concat recurrent h (P)
            limit = np.sqrt(6.0 / (fan_in + 4 * H))  # glorot uniform
            w[f"{prefix}/W_0"] = rng.uniform(-limit, limit,
                                             size=(fan_in, 4 * H))
            w[f"{prefix}/B"] = normal((4 * H,), 0.1)
            limit = np.sqrt(6.0 / (H + P))
            w[f"{prefix}/W_P_0"] = rng.uniform(-limit, limit, size=(H, P))
    return {k: v.astype(np.float32) for k, v in w.items()}


# ---------------------------------------------------------------------------
# Token embeddings
# ---------------------------------------------------------------------------


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def char_cnn_embeddings(
    weights: dict, options: dict, char_ids: np.ndarray, dtype=np.float64,
    word_ids: np.ndarray | None = None,
) -> np.ndarray:
    """Char-CNN token embeddings.

    Legend: B batch, N = T + 2 positions, C chars, E char dim, F filters,
    P projection dim, W word embedding dim.

    Args:
        char_ids: int ``(B, N, C)``, shifted ids (0 = padding).
        word_ids: int ``(B, N)``, shifted ids (0 = padding), for an
            ELMoForManyLangs model's word part: ``word_embed`` (no padding
            row in the file) is looked up and concatenated BEFORE the
            highway output, ``[word (W) ; char (F)]``, and the projection
            ``CNN_proj`` is always applied (upstream always projects).

    Returns:
        ``(B, N, P)`` (or ``(B, N, F)`` when F == P, i.e. no projection).
        Padding positions are NOT zero (conv bias etc. still applies), exactly
        as in bilm-tf.
    """
    cnn = options["char_cnn"]
    act = {"relu": _relu, "tanh": np.tanh}[cnn["activation"]]
    E = cnn["embedding"]["dim"]
    table = np.concatenate(
        [np.zeros((1, E), dtype), np.asarray(weights["char_embed"], dtype)],
        axis=0,
    )
    x = table[char_ids]  # (B, N, C, E)
    B, N, C, _ = x.shape

    pieces = []
    for i, (width, num) in enumerate(cnn["filters"]):
        # (width, E, num)
        kernel = np.asarray(weights[f"CNN/W_cnn_{i}"], dtype)[0]
        bias = np.asarray(weights[f"CNN/b_cnn_{i}"], dtype)  # (num,)
        n_pos = C - width + 1  # VALID convolution
        conv = np.zeros((B, N, n_pos, num), dtype)
        for k in range(width):
            # window offset k: chars k .. k + n_pos - 1,
            # (B, N, n_pos, E) @ (E, num)
            conv += x[:, :, k : k + n_pos, :] @ kernel[k]
        conv += bias
        pieces.append(act(conv.max(axis=2)))  # (B, N, num)
    h = np.concatenate(pieces, axis=-1).reshape(B * N, -1)  # (B*N, F)
    F = h.shape[-1]

    for k in range(cnn.get("n_highway", 0) or 0):
        w_c = np.asarray(weights[f"CNN_high_{k}/W_carry"], dtype)
        b_c = np.asarray(weights[f"CNN_high_{k}/b_carry"], dtype)
        w_t = np.asarray(weights[f"CNN_high_{k}/W_transform"], dtype)
        b_t = np.asarray(weights[f"CNN_high_{k}/b_transform"], dtype)
        carry = _sigmoid(h @ w_c + b_c)
        transform = _relu(h @ w_t + b_t)
        h = carry * transform + (1.0 - carry) * h

    if word_ids is not None:
        words = token_lookup_embeddings(weights["word_embed"], word_ids, dtype)
        h = np.concatenate([words.reshape(B * N, -1), h], axis=-1)  # (B*N, W+F)
    if word_ids is not None or F != options["lstm"]["projection_dim"]:
        h = h @ np.asarray(weights["CNN_proj/W_proj"], dtype) + np.asarray(
            weights["CNN_proj/b_proj"], dtype
        )
    return h.reshape(B, N, -1)


def token_lookup_embeddings(
    token_embedding: np.ndarray, token_ids: np.ndarray, dtype=np.float64
) -> np.ndarray:
    """Token-input embeddings: ``token_embedding`` is ``(vocab, P)`` without a
    padding row; ``token_ids`` ``(B, N)`` are vocab index + 1 (0 = padding).
    Returns ``(B, N, P)``; padding positions are zero."""
    table = np.asarray(token_embedding, dtype)
    table = np.concatenate([np.zeros((1, table.shape[1]), dtype), table],
                           axis=0)
    return table[token_ids]


# ---------------------------------------------------------------------------
# LSTM
# ---------------------------------------------------------------------------


def lstm_step(x, c_prev, h_prev, W, B, W_P, cell_clip, proj_clip):
    """One step of TF1 ``LSTMCell(num_units=H, num_proj=P, forget_bias=1)``.

    Args:
        x: ``(batch, in_dim)``; c_prev: ``(batch, H)``; h_prev: ``(batch, P)``.
        W: ``(in_dim + P, 4H)`` gates i, j, f, o; B: ``(4H,)``; W_P: ``(H, P)``.

    Returns:
        ``(c, h)`` of shapes ``(batch, H)`` and ``(batch, P)``.
    """
    z = np.concatenate([x, h_prev], axis=-1) @ W + B
    i, j, f, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f + 1.0) * c_prev + _sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        c = np.clip(c, -cell_clip, cell_clip)
    m = _sigmoid(o) * np.tanh(c)
    h = m @ W_P
    if proj_clip is not None:
        h = np.clip(h, -proj_clip, proj_clip)
    return c, h


def run_lstm_layer(inputs, lengths, W, B, W_P, cell_clip, proj_clip, c0, h0):
    """``dynamic_rnn`` of one LSTM layer with ``sequence_length``.

    Args:
        inputs: ``(batch, time, in_dim)``; lengths: int ``(batch,)``.
        c0: ``(batch, H)``, h0: ``(batch, P)`` initial state.

    Returns:
        outputs ``(batch, time, P)`` (zero for ``t >= length``) and the final
        state ``(c, h)``, which is the state after step ``length - 1`` (the
        state is carried unchanged past each row's length).
    """
    batch, time, _ = inputs.shape
    c, h = c0, h0
    outputs = np.zeros((batch, time, W_P.shape[1]), inputs.dtype)
    for t in range(time):
        live = (t < lengths)[:, None]  # (batch, 1)
        c_new, h_new = lstm_step(inputs[:, t], c, h, W, B, W_P, cell_clip,
                                 proj_clip)
        c = np.where(live, c_new, c)
        h = np.where(live, h_new, h)
        outputs[:, t] = np.where(live, h_new, 0.0)
    return outputs, (c, h)


def reverse_sequence(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)``: reverse
    the first ``lengths[b]`` positions of each row of ``(batch, time, ...)``;
    positions past the length stay where they are."""
    out = x.copy()
    for b, n in enumerate(lengths):
        out[b, :n] = x[b, :n][::-1]
    return out


# ---------------------------------------------------------------------------
# The biLM
# ---------------------------------------------------------------------------


def bilm_forward(
    weights: dict,
    options: dict,
    char_ids: np.ndarray | None = None,
    token_ids: np.ndarray | None = None,
    token_embedding: np.ndarray | None = None,
    initial_states=None,
    dtype=np.float64,
    word_ids: np.ndarray | None = None,
) -> dict:
    """Forward pass of bilm-tf's ``BidirectionalLanguageModel``.

    Legend: B batch, N = T + 2 positions (with BOS/EOS), P projection dim,
    H cell dim, L LSTM layers, D = 2P.

    Args:
        weights: bilm-tf HDF5 names -> arrays (see module docstring).
        options: the ``options.json`` dict.
        char_ids: int ``(B, N, C)``, shifted (0 = padding) -- char input; or
        token_ids: int ``(B, N)``, shifted (0 = padding) together with
        token_embedding: ``(vocab, P)`` without padding row -- token input.
        initial_states: ``initial_states[direction][layer] = (c, h)`` with
            ``c (B, H)``, ``h (B, P)``; direction 0 forward, 1 backward.
            ``None`` means zeros.
        dtype: computation dtype (float64 is the more independent check).
        word_ids: int ``(B, N)``, shifted (0 = padding), with char_ids:
            an ELMoForManyLangs model's word part (see
            :func:`char_cnn_embeddings`).

    Returns:
        dict with
          ``token_embeddings`` ``(B, N, P)``,
          ``layers`` ``(B, L + 1, N, D)``: layer 0 is
              ``concat(token_emb, token_emb)``, layer l is
              ``concat(forward_l, backward_l)`` (zero past each length),
          ``lengths`` int ``(B,)``,
          ``final_states`` in the layout of ``initial_states``.
    """
    lstm = options["lstm"]
    n_layers = lstm["n_layers"]
    H, P = lstm["dim"], lstm["projection_dim"]
    cell_clip = lstm.get("cell_clip")
    proj_clip = lstm.get("proj_clip")
    skip = lstm.get("use_skip_connections", False)

    if char_ids is not None:
        char_ids = np.asarray(char_ids)
        emb = char_cnn_embeddings(weights, options, char_ids, dtype,
                                  word_ids=word_ids)
        lengths = (char_ids > 0).any(axis=2).sum(axis=1)
    else:
        token_ids = np.asarray(token_ids)
        emb = token_lookup_embeddings(token_embedding, token_ids, dtype)
        lengths = (token_ids > 0).sum(axis=1)
    lengths = lengths.astype(np.int64)
    batch = emb.shape[0]

    directions_out = []
    final_states = []
    for direction in (0, 1):
        x = emb if direction == 0 else reverse_sequence(emb, lengths)
        outputs_per_layer = []
        states = []
        for layer in range(n_layers):
            prefix = lstm_prefix(direction, layer)
            if initial_states is None:
                c0 = np.zeros((batch, H), dtype)
                h0 = np.zeros((batch, P), dtype)
            else:
                c0, h0 = (np.asarray(s, dtype)
                          for s in initial_states[direction][layer])
            out, state = run_lstm_layer(
                x,
                lengths,
                np.asarray(weights[f"{prefix}/W_0"], dtype),
                np.asarray(weights[f"{prefix}/B"], dtype),
                np.asarray(weights[f"{prefix}/W_P_0"], dtype),
                cell_clip,
                proj_clip,
                c0,
                h0,
            )
            if skip and layer > 0:
                # ResidualWrapper: residual on the output only, and dynamic_rnn
                # zeroes outputs past the length AFTER the wrapper ran.
                live = (np.arange(x.shape[1])[None, :]
                        < lengths[:, None])[..., None]
                out = np.where(live, out + x, 0.0)
            outputs_per_layer.append(out)
            states.append(state)
            x = out
        if direction == 1:
            outputs_per_layer = [reverse_sequence(o, lengths)
                                 for o in outputs_per_layer]
        directions_out.append(outputs_per_layer)
        final_states.append(states)

    layers = [np.concatenate([emb, emb], axis=-1)]
    for layer in range(n_layers):
        layers.append(
            np.concatenate([directions_out[0][layer],
                            directions_out[1][layer]], axis=-1)
        )
    return {
        "token_embeddings": emb,
        "layers": np.stack(layers, axis=1),
        "lengths": lengths,
        "final_states": final_states,
    }


def remove_bos_eos(layers: np.ndarray, lengths: np.ndarray):
    """Drop BOS/EOS like bilm-tf's ``remove_sentence_boundaries``.

    Args:
        layers: ``(B, L + 1, T + 2, D)``; lengths: ``(B,)`` counts with BOS/EOS.

    Returns:
        ``(B, L + 1, T, D)`` with positions ``1 .. length - 2`` of each row
        moved to ``0 .. length - 3`` and zero elsewhere, and the new lengths
        ``(B,)`` (``length - 2``).
    """
    B, n_layers, N, D = layers.shape
    out = np.zeros((B, n_layers, N - 2, D), layers.dtype)
    for b, n in enumerate(lengths):
        out[b, :, : n - 2] = layers[b, :, 1 : n - 1]
    return out, np.asarray(lengths) - 2


# ---------------------------------------------------------------------------
# weight_layers (bilm/elmo.py)
# ---------------------------------------------------------------------------


def scalar_mix(
    lm_embeddings: np.ndarray,
    mask: np.ndarray,
    w: np.ndarray,
    gamma: float,
    use_top_only: bool = False,
    do_layer_norm: bool = False,
) -> np.ndarray:
    """bilm-tf's ``weight_layers`` in numpy.

    Args:
        lm_embeddings: ``(B, L, T, D)``; mask: bool ``(B, T)``;
        w: ``(L,)`` unnormalised scalar weights; gamma: scalar.

    Returns:
        ``(B, T, D)``: ``gamma * layer[-1]`` when ``use_top_only``, else
        ``gamma * sum_l softmax(w + 1/L)[l] * f(layer_l)`` where ``f`` is the
        identity or, with ``do_layer_norm``, a normalisation by ONE mean and
        variance per layer over all masked positions and dims of the batch.
    """
    x = np.asarray(lm_embeddings)
    n_layers, D = x.shape[1], x.shape[3]
    if use_top_only:
        return gamma * x[:, -1]
    m = np.asarray(mask, x.dtype)[..., None]  # (B, T, 1)
    logits = np.asarray(w, x.dtype) + 1.0 / n_layers
    e = np.exp(logits - logits.max())
    weights = e / e.sum()
    total = np.zeros_like(x[:, 0])
    for k in range(n_layers):
        layer = x[:, k]
        if do_layer_norm:
            n = m.sum() * D
            masked = layer * m
            mean = masked.sum() / n
            var = (((masked - mean) * m) ** 2).sum() / n
            layer = (layer - mean) / np.sqrt(var + 1e-12)
        total = total + weights[k] * layer
    return gamma * total


def l2_regularization(w: np.ndarray, l2_coef: float) -> float:
    """The ``weight_layers`` regulariser: ``l2_coef * sum(w ** 2)``."""
    return float(l2_coef * np.sum(np.square(w)))


def assert_reproduces_manylangs_reference(converted_dir, reference_file,
                                          atol: float = 1e-5) -> None:
    """bilm-tf's equations on a converted ELMoForManyLangs model
    (``converted_dir``: ``options.json`` and ``lm_weights.hdf5``), fed
    upstream's own ids from ``reference_file`` (shifted by +1: 0 is
    padding) in one padded batch, give upstream's layers for all 15
    sentences, to ``atol``."""
    import json

    import h5py

    weights = load_hdf5_weights(os.path.join(converted_dir, "lm_weights.hdf5"))
    with open(os.path.join(converted_dir, "options.json"),
              encoding="utf-8") as f:
        options = json.load(f)
    with h5py.File(reference_file, "r") as ref:
        n = len([k for k in ref.keys() if k.isdigit()])
        chars = [ref[f"char_ids/{i}"][...] for i in range(n)]
        words = [ref[f"word_ids/{i}"][...] for i in range(n)]
        expected = [ref[str(i)][...] for i in range(n)]
    assert n == 15
    N = max(len(w) for w in words)
    char_ids = np.zeros((n, N, chars[0].shape[1]), np.int64)
    word_ids = np.zeros((n, N), np.int64)
    for i in range(n):
        char_ids[i, :len(chars[i])] = chars[i] + 1
        word_ids[i, :len(words[i])] = words[i] + 1
    result = bilm_forward(weights, options, char_ids=char_ids,
                          word_ids=word_ids)
    layers, lengths = remove_bos_eos(result["layers"], result["lengths"])
    for i in range(n):
        got = layers[i, :, :lengths[i]]
        assert got.shape == expected[i].shape
        np.testing.assert_allclose(got, expected[i], rtol=0, atol=atol,
                                   err_msg=f"sentence {i}")
