"""Public names imported on first use (PEP 562), for the packages whose
light parts must not import TensorFlow."""

import importlib


def lazy_exports(package: str, exports: dict, namespace: dict):
    """``(__getattr__, __dir__)`` of ``package``.

    ``exports`` maps a name to its defining module. A name is imported
    from its module the first time it is looked up. It is then kept in
    ``namespace``, the package's globals, so that later look-ups skip
    ``__getattr__``."""

    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
