"""Placeholder initial values for weights that a file is about to overwrite.

A random initialiser is wasted work when every weight is assigned from a file
right after the model is built. And TensorFlow's CPU allocator keeps the
memory of its temporaries as resident memory. Inside
:func:`placeholder_weights` the layers' random initialisers become zeros,
one buffer per variable, nothing else.
:func:`~bilm_keras.weights.load_bilm_tf_hdf5` builds an unbuilt backbone
this way.
"""

import contextlib
import contextvars

_PLACEHOLDERS = contextvars.ContextVar("bilm_keras_placeholder_weights",
                                       default=False)


@contextlib.contextmanager
def placeholder_weights():
    """Weights created inside start as zeros instead of random values."""
    token = _PLACEHOLDERS.set(True)
    try:
        yield
    finally:
        _PLACEHOLDERS.reset(token)


def initial(initializer):
    """``initializer``, or ``"zeros"`` inside :func:`placeholder_weights`."""
    return "zeros" if _PLACEHOLDERS.get() else initializer
