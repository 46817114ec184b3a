"""The precision a biLM computes in: which dtype its matrix products take,
and nothing else.

One rule holds for every layer and every LSTM path: **the products run
in the compute dtype, everything else in float32.** The variables stay
float32: bilm-tf's weights, the optimizer's slots, the master copy mixed
precision trains. Each product casts its two operands to the compute
dtype and its result back to float32. So the biases, the gate
nonlinearities, the LSTM cell state, the clips, the skip connections and
every layer's output are float32 whatever the precision.

That is where the measurements of ``bench/RESULTS.md`` ("Precision",
2026-11-26) put the line. On an AMX Xeon a bfloat16 product of the
model's shapes runs 2.8-4.0x float32. The gate math in bfloat16 runs at
0.42x float32, because TensorFlow's CPU kernels convert each element.
Rounding the carried state to 8 bits of mantissa would add its error anew
at every step.

The precisions (``PRECISIONS``), each a Keras ``DTypePolicy`` whose
variables are float32:

=================  ==================  ====================================
precision          Keras policy        for
=================  ==================  ====================================
``float32``        ``float32``         the default: exact, as before
``bfloat16``       ``mixed_bfloat16``  embedding on AMX CPUs and on GPUs of
                                       compute capability >= 8.0
``float16``        ``mixed_float16``   embedding on GPUs of compute
                                       capability >= 7.0
``mixed_bfloat16`` ``mixed_bfloat16``  training (float32 master weights)
``mixed_float16``  ``mixed_float16``   training, with loss scaling
=================  ==================  ====================================

``bfloat16`` and ``mixed_bfloat16`` compute the same thing. The two names
say what a user asks for, in bilm-tf's and Keras' words for inference and
training. A layer only sees the policy.
"""

import keras
import tensorflow as tf

from bilm_keras._utils.fast_precision import (
    KERAS_POLICIES,
    PRECISIONS,
    warn_if_slow,
)
from bilm_keras._utils.settings import SettingError

__all__ = ["KERAS_POLICIES", "PRECISIONS", "compute_dtype_of", "dtype_policy",
           "einsum", "float32_io", "matmul", "set_precision", "tensordot"]



def dtype_policy(precision: str) -> keras.DTypePolicy:
    """The Keras policy a model of ``precision`` builds its layers with.

    Raises:
        SettingError: an unknown precision, naming the ones there are (a
            ``ValueError``).
    """
    if precision not in KERAS_POLICIES:
        raise SettingError("precision", f"expected one of "
                                        f"{', '.join(PRECISIONS)}, found "
                                        f"{precision!r}")
    return keras.DTypePolicy(KERAS_POLICIES[precision])


def compute_dtype_of(precision: str) -> str:
    """``"float32"``, ``"bfloat16"`` or ``"float16"``: the dtype the
    products of ``precision`` run in."""
    return dtype_policy(precision).compute_dtype


def matmul(a, b, compute_dtype="float32", **kwargs):
    """``a @ b`` with both operands in ``compute_dtype`` and the product
    in float32, under any Keras backend (``keras.ops.matmul``).

    float32 is the backend's own matmul, bit for bit. Otherwise the
    operands are rounded to ``compute_dtype``, multiplied there (oneDNN
    and cuBLAS add up the products in float32 inside) and the result is
    cast back. ``**kwargs`` (``transpose_b``) are ``tf.matmul``'s, for
    the TensorFlow-only training window and its hand-written backward.
    """
    if kwargs:
        return _tf_matmul(a, b, compute_dtype, **kwargs)
    if compute_dtype == "float32":
        return keras.ops.matmul(a, b)
    product = keras.ops.matmul(keras.ops.cast(a, compute_dtype),
                               keras.ops.cast(b, compute_dtype))
    return keras.ops.cast(product, "float32")


def _tf_matmul(a, b, compute_dtype, **kwargs):
    """:func:`matmul` as ``tf.matmul(a, b, **kwargs)``."""
    if tf.as_dtype(compute_dtype) == tf.float32:
        return tf.matmul(a, b, **kwargs)
    product = tf.matmul(tf.cast(a, compute_dtype), tf.cast(b, compute_dtype),
                        **kwargs)
    return tf.cast(product, tf.float32)


def tensordot(a, b, compute_dtype="float32"):
    """``a @ b`` over the last axis of ``a`` (`(..., k) x (k, n)`) as
    :func:`matmul`: operands in ``compute_dtype``, the result in
    float32."""
    if compute_dtype == "float32":
        return keras.ops.tensordot(a, b, 1)
    return keras.ops.cast(keras.ops.tensordot(
        keras.ops.cast(a, compute_dtype), keras.ops.cast(b, compute_dtype),
        1), "float32")


def einsum(equation, a, b, compute_dtype="float32"):
    """``tf.einsum(equation, a, b)`` as :func:`matmul`: operands in
    ``compute_dtype``, the result in float32 (the TensorFlow-only
    training window's)."""
    if tf.as_dtype(compute_dtype) == tf.float32:
        return tf.einsum(equation, a, b)
    return tf.cast(tf.einsum(equation, tf.cast(a, compute_dtype),
                             tf.cast(b, compute_dtype)), tf.float32)


def float32_io(layer: keras.layers.Layer) -> None:
    """Makes ``layer`` take its inputs as they come under any policy (Keras
    does not cast them to the compute dtype): the layer casts each
    product's operands itself (:func:`matmul`). Its variables are created
    with ``add_weight(autocast=False)``, so they read as float32 too
    (Keras enters its autocast scope for a mixed policy even when the
    layer's ``autocast`` is off)."""
    layer.autocast = False


def set_precision(layer: keras.layers.Layer, precision: str) -> None:
    """Gives ``layer`` and every layer inside it, built or not, the
    policy of ``precision`` and :func:`float32_io`.

    Every policy here keeps float32 variables. So a loaded model changes
    only the dtype its products run in. A graph traced before runs as it
    was traced, so trace anew. A compute dtype this machine does not run
    fast is logged once as a warning
    (:func:`~bilm_keras._utils.fast_precision.warn_if_slow`). It names the
    CPU flag or the GPU's compute capability that is missing.

    Raises:
        ValueError: an unknown precision.
    """
    policy = dtype_policy(precision)
    warn_if_slow(policy.compute_dtype)
    # Keras' own walk over the layers a layer tracks, itself included
    for sublayer in layer._flatten_layers(include_self=True, recursive=True):
        sublayer.dtype_policy = policy
        float32_io(sublayer)  # variables read (e.g. LSTM states) as float32
