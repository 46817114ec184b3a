"""The one error of :mod:`bilm_keras.pretrained`."""


class PretrainedModelError(ValueError):
    """A model spec that cannot be resolved.

    That is an unknown name, a failed or cut-short download, or an archive
    that is unreadable, hostile or holds no model (or two). It is also a
    model that cannot be converted.

    Its message is one line naming the spec, URL or file and what was
    expected. Nothing is left in the cache. It is a ``ValueError``, so the
    ``bilm-keras`` command prints it as ``bilm-keras CMD: error: MESSAGE``
    and exits 1.
    """
