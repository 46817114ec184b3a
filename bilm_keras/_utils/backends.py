"""Which Keras backend runs: TensorFlow's own fast paths apply under it
only (``KERAS_BACKEND``, read by Keras when it is first imported)."""

import keras


def backend() -> str:
    """``"tensorflow"``, ``"jax"`` or ``"torch"``: Keras' backend."""
    return keras.backend.backend()


def on_tensorflow() -> bool:
    """Whether Keras runs on TensorFlow, where the biLM's TensorFlow-only
    loops, string inputs, token cache and SavedModel export apply."""
    return backend() == "tensorflow"


#: the class that turns strings into the biLM's ids under every backend
PREPROCESSOR = "bilm_keras.ELMoPreprocessor"


def reject_strings(what: str, inputs) -> None:
    """Raises when ``inputs`` holds strings outside TensorFlow.

    Under JAX and PyTorch a model takes ids only: strings become ids in
    ``tf.data`` or NumPy first, as keras-hub's preprocessors make them.

    Raises:
        TypeError: naming ``what``, the backend and the preprocessor.
    """
    dtype = getattr(inputs, "dtype", None)
    if dtype is None or on_tensorflow():
        return
    name = str(getattr(dtype, "name", dtype))
    if name in ("object", "string") or name.startswith(("<U", "<S", "str")) \
            or getattr(dtype, "kind", "") in ("U", "S", "O"):
        raise TypeError(
            f"{what}: inputs: expected integer ids under KERAS_BACKEND="
            f"{backend()}, found strings ({name}); strings are read under "
            f"TensorFlow only: turn them into ids with {PREPROCESSOR} "
            f"first (in tf.data or on NumPy arrays)")


def concrete_jax_arrays(inputs) -> bool:
    """Whether Keras runs on JAX and ``inputs`` are concrete arrays: an
    eager call, outside ``jax.jit`` and outside a functional model."""
    if backend() != "jax":
        return False
    import jax

    leaves = jax.tree_util.tree_leaves(inputs)
    return bool(leaves) and not any(
        isinstance(x, (jax.core.Tracer, keras.KerasTensor)) for x in leaves)
