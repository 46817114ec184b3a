"""A backbone's outputs as bilm-tf's ``lm_embeddings``: the layers stacked,
the sentence boundaries dropped (the facade's call and the SavedModel
export both return them)."""

import tensorflow as tf


def lm_layers(outputs: dict) -> tf.Tensor:
    """Stacks the backbone's layers: `(batch, n_layers + 1, time, dim)`.

    Layer 0 is the token embedding, duplicated for both directions. Layer
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

    ``lengths`` counts the boundaries. Positions past a row's last real
    token come back as zeros, where bilm-tf left arbitrary values.

    Returns:
        ``(embeddings, lengths_without_boundaries, mask (B, T) bool)``.
    """
    lengths = tf.maximum(lengths - 2, 0)
    inner = layers[:, :, 1:-1]  # (B, L, T, D)
    mask = tf.sequence_mask(lengths, tf.shape(inner)[2])  # (B, T)
    inner = inner * tf.cast(mask, inner.dtype)[:, None, :, None]
    return inner, lengths, mask
