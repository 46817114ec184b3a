"""A backbone's outputs as bilm-tf's ``lm_embeddings``: the layers stacked,
the sentence boundaries dropped (the facade's call and the SavedModel
export both return them). ``keras.ops``: any Keras backend."""

import keras


def lm_layers(outputs: dict):
    """Stacks the backbone's layers: `(batch, n_layers + 1, time, dim)`.

    Layer 0 is the token embedding, duplicated for both directions. Layer
    ``l`` concatenates the forward and backward outputs of LSTM layer ``l``.
    ``dim`` is ``2 * projection_dim`` (``projection_dim`` for a
    unidirectional model).
    """
    ops = keras.ops
    directions = [d for d in ("forward", "backward") if d in outputs]
    tok = outputs["token_embeddings"]
    layers = [ops.concatenate([tok] * len(directions), axis=-1)]
    for i in range(len(outputs["forward"])):
        layers.append(ops.concatenate([outputs[d][i] for d in directions],
                                      axis=-1))
    return ops.stack(layers, axis=1)


def strip_boundaries(layers, lengths):
    """Drops ``<S>``/``</S>``: `(B, L, T + 2, D)` -> `(B, L, T, D)`.

    ``lengths`` counts the boundaries. Positions past a row's last real
    token come back as zeros, where bilm-tf left arbitrary values.

    Returns:
        ``(embeddings, lengths_without_boundaries, mask (B, T) bool)``.
    """
    ops = keras.ops
    lengths = ops.maximum(ops.cast(lengths, "int32") - 2, 0)
    inner = layers[:, :, 1:-1]  # (B, L, T, D)
    steps = ops.arange(ops.shape(inner)[2], dtype="int32")
    mask = steps[None, :] < lengths[:, None]  # (B, T)
    inner = inner * ops.cast(mask, inner.dtype)[:, None, :, None]
    return inner, lengths, mask
