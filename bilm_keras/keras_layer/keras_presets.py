"""ELMoEmbedding as a keras-hub preset: written, read, and what a saved
config's format version means.

A preset folder has keras-hub's layout (:mod:`bilm_keras.pretrained.
keras_preset_files`). Its ``config.json`` holds an ``ELMoBackbone``:
the layer's own config under keras-hub's ``Backbone`` class, so that
``keras_hub.models.Backbone.from_preset(DIR)`` builds it with
keras-hub installed (:mod:`.keras_hub_backbone`). Its
``model.weights.h5`` is that backbone's ``save_weights``: the model of
one ``token_ids`` input and the layer. Without keras-hub the layer is
read back from the same two files into the same model's shape.

The format version: the layer's config and weights, as a ``.keras`` file
or a preset holds them, carry ``format_version``. Version 1 is this
release's: the constructor's arguments as ``get_config`` lists them, the
biLM's weights in the backbone's order with their shape table. A config
without it is version 1. A larger number was written by a later
bilm_keras whose config this one cannot read, and loading it is an error
that says to upgrade.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os

import keras

from bilm_keras._utils.atomic_files import atomic_directory
from bilm_keras._utils.version import __version__
from bilm_keras.keras_layer.elmo_preprocessor import ELMoPreprocessor
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.pretrained.keras_preset_files import (
    ASSETS_DIR,
    BACKBONE_CLASS,
    CONFIG_FILE,
    METADATA_FILE,
    PREPROCESSOR_FILE,
    WEIGHTS_FILE,
)

#: the config format this release writes and reads up to
FORMAT_VERSION = 1
FORMAT_KEY = "format_version"
#: the layer's registered name; a preset's config.json may name it too
LAYER_CLASS = "bilm_keras>ELMoEmbedding"
#: the arguments of the layer that ``from_preset`` may change
LAYER_OVERRIDES = ("output", "trainable", "layer_norm", "dropout",
                   "l2_coef", "token_cache_size", "name")


def check_format_version(config: dict, source: str) -> dict:
    """``config`` without its ``format_version``, checked.

    Raises:
        ValueError: a version that is not a positive integer, or one newer
            than :data:`FORMAT_VERSION`, naming ``source``.
    """
    config = dict(config)
    version = config.pop(FORMAT_KEY, 1)
    if isinstance(version, bool) or not isinstance(version, int) \
            or version < 1:
        raise ValueError(
            f"{source}: {FORMAT_KEY}: expected an integer from 1, found "
            f"{version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{source}: {FORMAT_KEY}: expected at most {FORMAT_VERSION} "
            f"(what bilm_keras {__version__} reads), found {version}: the "
            "file was written by a newer bilm_keras; upgrade to load it")
    return config


def ids_input(layer) -> keras.KerasTensor:
    """The ``token_ids`` input of a preset's backbone: the batcher's ids
    `(batch, time + 2, ids_width)`, or `(batch, time + 2)` for a
    word-input model."""
    width = layer.ids_width
    shape = (None,) if width is None else (None, width)
    return keras.Input(shape=shape, dtype="int32", name="token_ids")


def _weights_model(layer) -> keras.Model:
    """The model whose ``save_weights`` a preset's weights file is: one
    input and ``layer``, as the backbone lays them out."""
    token_ids = ids_input(layer)
    return keras.Model(token_ids, layer(token_ids))


def _write_json(path: str, value) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, indent=4))


def _keras_hub_version():
    try:
        return importlib.metadata.version("keras-hub")
    except importlib.metadata.PackageNotFoundError:
        return None


def save_to_preset(layer, preset_dir: str | os.PathLike, *,
                   overwrite: bool = False) -> None:
    """Writes ``layer`` into ``preset_dir`` in keras-hub's layout, whole
    or not at all.

    Raises:
        ValueError: a non-empty ``preset_dir`` without ``overwrite``.
    """
    config = layer.get_config()
    preprocessor = ELMoPreprocessor.for_layer(
        layer, name=f"{layer.name}_preprocessor")
    prep_config = keras.saving.serialize_keras_object(preprocessor)
    # the vocabulary and dictionaries are assets, as keras-hub keeps a
    # tokenizer's
    prep_config["config"].update(vocabulary=None, char_dic=None,
                                 word_dic=None)
    with atomic_directory(preset_dir, overwrite=overwrite) as tmp:
        _write_json(os.path.join(tmp, CONFIG_FILE), {
            "module": "bilm_keras.keras_layer.keras_hub_backbone",
            "class_name": "ELMoBackbone",
            "config": config,
            "registered_name": BACKBONE_CLASS,
        })
        _weights_model(layer).save_weights(os.path.join(tmp, WEIGHTS_FILE))
        _write_json(os.path.join(tmp, PREPROCESSOR_FILE), prep_config)
        preprocessor.save_assets(os.path.join(tmp, ASSETS_DIR))
        _write_json(os.path.join(tmp, METADATA_FILE), {
            "keras_version": keras.version(),
            "keras_hub_version": _keras_hub_version(),
            "bilm_keras_version": __version__,
            "parameter_count": layer.count_params(),
            "date_saved": datetime.datetime.now().strftime(
                "%Y-%m-%d@%H:%M:%S"),
            "tasks": [],
        })


def _read_json(path: str, label: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{label}: expected a JSON object, cannot read it "
                         f"({e})") from None
    if not isinstance(value, dict) or not isinstance(
            value.get("config"), dict):
        raise ValueError(f"{label}: expected a serialized Keras object "
                         "with a 'config' object, found none")
    return value


def load_preset(cls, folder: str, label: str, **overrides):
    """The layer of a preset folder, its weights loaded.

    Args:
        cls: :class:`~bilm_keras.ELMoEmbedding`.
        folder: the preset's local folder.
        label: what to name it by in errors, e.g. the ``hf://`` handle.
        **overrides: the layer arguments of :data:`LAYER_OVERRIDES`.

    Raises:
        ValueError: a ``config.json`` of another class or a newer format
            version, or weights that do not fit the config, naming the
            file.
    """
    config_label = f"{label}: {CONFIG_FILE}"
    config = _read_json(os.path.join(folder, CONFIG_FILE), config_label)
    registered = config.get("registered_name")
    if registered not in (BACKBONE_CLASS, LAYER_CLASS):
        raise ValueError(
            f"{config_label}: registered_name: expected {BACKBONE_CLASS!r} "
            f"(a preset of ELMoEmbedding.save_to_preset), found "
            f"{registered!r}")
    layer_config = check_format_version(config["config"], config_label)
    layer_config.update(overrides)
    weights = os.path.join(folder, WEIGHTS_FILE)
    if not os.path.isfile(weights):
        raise ValueError(f"{label}: expected the weights {WEIGHTS_FILE} "
                         "beside config.json, found none")
    # every weight is read from the file next
    with placeholder_weights():
        layer = cls.from_config(layer_config)
    try:
        _weights_model(layer).load_weights(weights)
    except ValueError as e:
        # Keras leads with "A total of N objects could not be loaded",
        # then the first object's own error: that one names the weight
        lines = [line for line in str(e).splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].startswith("A total of"):
            lines = lines[1:]
            if lines[0].startswith("Example error message") \
                    and len(lines) > 1:
                lines = lines[1:]
        raise ValueError(
            f"{label}: {WEIGHTS_FILE}: the weights do not fit "
            f"{CONFIG_FILE}: {lines[0].strip() if lines else e}") from None
    return layer
