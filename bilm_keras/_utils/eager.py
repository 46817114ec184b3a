"""bilm_keras runs eagerly (TensorFlow 2): a clear error instead of wrong
numbers inside a ``tf.compat.v1`` graph."""

import tensorflow as tf


class GraphModeError(RuntimeError):
    """A model built or called in TF1 graph mode."""


def require_eager(what: str, *, allow_functions: bool = False) -> None:
    """Raises :class:`GraphModeError` unless TensorFlow executes eagerly.

    Inside ``tf.compat.v1.Graph().as_default()``, or after
    ``tf.compat.v1.disable_eager_execution()``, the weights loaded from an
    HDF5 file are assigned in a graph that no session runs. The model then
    computes with whatever a later ``global_variables_initializer`` gives,
    as in bilm-tf's session code: silently wrong numbers.

    Args:
        what: the thing being built or called, named in the message.
        allow_functions: also accept a ``tf.function`` being traced. A
            call from a user's own TF2 function is fine, building is not.
    """
    if tf.executing_eagerly() or (allow_functions and tf.inside_function()):
        return
    raise GraphModeError(
        f"{what}: expected TensorFlow 2's eager mode, found a tf.compat.v1 "
        "graph; bilm_keras runs eagerly (TF2): build and call it outside "
        "`with tf.compat.v1.Graph().as_default():` and do not call "
        "tf.compat.v1.disable_eager_execution() (no Session is needed)")
