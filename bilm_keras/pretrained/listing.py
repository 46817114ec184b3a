"""The registry with what is cached: :func:`list_models` (for ``bilm-keras
models``)."""

from __future__ import annotations

import dataclasses
import os

from bilm_keras._utils.atomic_files import folder_bytes
from bilm_keras.pretrained.model_cache import (
    default_cache_dir,
    entry_dir,
    is_complete,
)
from bilm_keras.pretrained.registry import RegisteredModel, registered_models


@dataclasses.dataclass(frozen=True)
class ListedModel:
    """A registered model and whether it is in the cache.

    Args:
        model: the registry row (name, language, format, size where its
            publisher states it, source, license, citation, URLs).
        directory: the cached model's folder, or None (not cached).
        cached_bytes: the cached folder's size on disk, or None.
    """

    model: RegisteredModel
    directory: str | None
    cached_bytes: int | None

    @property
    def cached(self) -> bool:
        return self.directory is not None


def list_models(*, cache_dir: str | os.PathLike | None = None
                ) -> list[ListedModel]:
    """Every registered model, in the registry's order, with its cache
    state (``cache_dir`` default as :func:`resolve_model`'s). Reads the
    cache only: no network access, nothing written."""
    cache = (os.path.abspath(os.fspath(cache_dir)) if cache_dir
             else default_cache_dir())
    listed = []
    for name, model in registered_models().items():
        entry = entry_dir(cache, name)
        if is_complete(entry):
            listed.append(ListedModel(model, entry, folder_bytes(entry)))
        else:
            listed.append(ListedModel(model, None, None))
    return listed
