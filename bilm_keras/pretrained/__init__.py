"""Published ELMo models by name: the registry, download, cache and safe
archive reading, all without TensorFlow. A model of a foreign family is
converted once into the cache by the converters of
:mod:`bilm_keras.weights`.

::

    from bilm_keras.pretrained import resolve_model, list_models
    model = resolve_model("manylangs-zh")  # or a URL, an archive, a folder
    model.options_file, model.weight_file, model.vocab_file

The public names:

* :func:`resolve_model` (:mod:`.resolution`): SPEC ->
  :class:`ResolvedModel`, a local model in bilm-tf's layout.
* :func:`check_model_spec`: what kind of SPEC it is, without fetching
  anything.
* :func:`list_models` (:mod:`.listing`): the registry with the cache state,
  as :class:`ListedModel` rows.
* :func:`registered_models` / :func:`registered_model` (:mod:`.registry`):
  the registry's :class:`RegisteredModel` rows.
* :func:`check_before_download` (:mod:`.registry`): a registered model
  refused, from its row, for a call it cannot serve.
* :func:`default_cache_dir` (:mod:`.model_cache`).
* the environment variables :data:`CACHE_ENV` (``BILM_KERAS_CACHE``) and
  :data:`MIRROR_ENV` (``BILM_KERAS_MODEL_MIRROR``).
* :class:`PretrainedModelError`, the one error, a ``ValueError``.
"""

from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.pretrained.listing import ListedModel, list_models
from bilm_keras.pretrained.model_cache import CACHE_ENV, default_cache_dir
from bilm_keras.pretrained.registry import (
    MIRROR_ENV,
    RegisteredModel,
    check_before_download,
    registered_model,
    registered_models,
)
from bilm_keras.pretrained.resolution import (
    ResolvedModel,
    check_model_spec,
    resolve_model,
)

__all__ = [
    "CACHE_ENV",
    "MIRROR_ENV",
    "ListedModel",
    "PretrainedModelError",
    "RegisteredModel",
    "ResolvedModel",
    "check_before_download",
    "check_model_spec",
    "default_cache_dir",
    "list_models",
    "registered_model",
    "registered_models",
    "resolve_model",
]
