"""keras-hub's preset layout: its file names, and whether a folder is
one.

``save_to_preset`` writes, as keras-hub's ``KerasPresetSaver`` does::

    config.json          the backbone, serialized by Keras
    model.weights.h5     its weights (``Model.save_weights``)
    preprocessor.json    the preprocessor, serialized by Keras
    metadata.json        versions, parameter count, date
    assets/tokenizer/    the preprocessor's vocabulary or dictionaries

A folder is a Keras preset when its ``config.json`` is a serialized Keras
object, one with a ``registered_name``, as keras-hub's
``get_preset_loader`` tells it. An ELMoForManyLangs model's
``config.json`` has none.
"""

from __future__ import annotations

import json
import os
from typing import Optional

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
PREPROCESSOR_FILE = "preprocessor.json"
METADATA_FILE = "metadata.json"
ASSETS_DIR = "assets/tokenizer"
#: the registered name of the backbone a preset of ours holds
BACKBONE_CLASS = "bilm_keras>ELMoBackbone"
#: a config.json larger than this is not a preset's (skipped unread)
_MAX_CONFIG_BYTES = 64 << 20


def preset_class(folder: str | os.PathLike) -> Optional[str]:
    """The ``registered_name`` of ``folder``'s ``config.json``, or None
    when the folder is no Keras preset."""
    path = os.path.join(os.fspath(folder), CONFIG_FILE)
    if not os.path.isfile(path) or os.path.getsize(path) > _MAX_CONFIG_BYTES:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    name = config.get("registered_name")
    return name if isinstance(name, str) else None
