"""The package's Keras layers known to ``keras.saving`` once Keras is
imported, without importing Keras and TensorFlow before it is.

``keras.models.load_model`` finds a custom layer by its registered name,
e.g. ``"bilm_keras>ELMoEmbedding"``, which exists only once the layer's
module has run. Importing that module with the package would import
TensorFlow for every light use of the package, the command's parser
among them. So the package registers a stand-in under each name as soon
as Keras is imported, or at once if it already is. The stand-in's
``from_config`` imports the real module, which registers the real class
in its place, and returns the real layer.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Mapping


def _stand_in(registered_name: str, module: str, class_name: str) -> type:
    """A class whose ``from_config`` builds ``module.class_name``'s."""

    def from_config(cls, config):
        real = getattr(importlib.import_module(module), class_name)
        return real.from_config(config)

    return type(class_name, (), {
        "from_config": classmethod(from_config),
        "__doc__": f"Loads {registered_name} from {module} on first use.",
    })


def _register(layers: Mapping[str, tuple[str, str]]) -> None:
    import keras

    registry = keras.saving.get_custom_objects()
    for registered_name, (module, class_name) in layers.items():
        # the real class, once its module has run, stays
        registry.setdefault(registered_name,
                            _stand_in(registered_name, module, class_name))


class _AfterKerasLoader(importlib.abc.Loader):
    """Keras' own loader, then the registration."""

    def __init__(self, loader, register):
        self._loader = loader
        self._register = register

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._register()


class _KerasImportHook(importlib.abc.MetaPathFinder):
    """Finds ``keras`` (or ``module``) as the other finders do, and
    registers once it ran."""

    def __init__(self, register, module: str = "keras"):
        self._register = register
        self._module = module

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self._module:
            return None
        sys.meta_path.remove(self)  # once, and not for the lookup below
        spec = importlib.util.find_spec(self._module)
        if spec is not None and spec.loader is not None:
            spec.loader = _AfterKerasLoader(spec.loader, self._register)
        return spec


def register_when_keras_loads(layers: Mapping[str, tuple[str, str]]
                              ) -> None:
    """Registers ``layers`` with ``keras.saving`` now if Keras is imported,
    else as soon as it is.

    Args:
        layers: ``{registered name: (module, class name)}``.
    """
    layers = dict(layers)
    if "keras" in sys.modules:
        _register(layers)
    else:
        sys.meta_path.insert(0, _KerasImportHook(lambda: _register(layers)))


def import_when_imported(module: str, ours: str) -> None:
    """Imports the module ``ours`` once ``module`` is imported, now if it
    already is: e.g. a class that subclasses one of ``module``'s, which
    must be registered before ``module`` looks for it by name."""
    def load():
        importlib.import_module(ours)

    if module in sys.modules:
        load()
    else:
        sys.meta_path.insert(0, _KerasImportHook(load, module))
