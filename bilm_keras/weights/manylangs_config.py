"""An ELMoForManyLangs model directory's configuration, found and checked
as upstream's loader finds it.

A released model directory has ``config.json``, the training arguments.
Only its ``config_path`` is read, which names the model configuration.
Upstream (``Embedder.get_model``) looks for it at:

1. ``os.path.join(model_dir, config_path)``, an absolute path as is.
2. its file name inside ``model_dir``. Released files often hold a stale
   absolute path of the machine they were trained on.
3. its file name among the two configurations upstream ships
   (:data:`PACKAGED_CONFIGS`, copied here as data).

Only the variant bilm_keras computes is accepted: encoder ``elmo`` and
token embedder ``cnn`` with characters. Upstream's ``lstm`` variants are
other models. A field that does not fit is named with the file, the field,
what was expected and what was found.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Optional, Tuple

logger = logging.getLogger(__name__)


def _released_config() -> dict:
    # elmoformanylangs/configs/cnn_50_100_512_4096_sample.json (upstream
    # commit b3de5f1): the configuration of the released models
    return {
        "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3,
                    "proj_clip": 3, "dim": 4096, "n_layers": 2},
        "token_embedder": {
            "name": "cnn", "activation": "relu",
            "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256],
                        [6, 512], [7, 1024]],
            "n_highway": 2, "word_dim": 100, "char_dim": 50,
            "max_characters_per_token": 50},
        "classifier": {"name": "sampled_softmax", "n_samples": 8192},
        "dropout": 0.1,
    }


#: the configurations upstream ships, by file name. Upstream's two files
#: have the same contents (``cnn_0_...`` included: word_dim 100, char_dim 50)
PACKAGED_CONFIGS = {
    "cnn_50_100_512_4096_sample.json": _released_config(),
    "cnn_0_100_512_4096_sample.json": _released_config(),
}

CONFIG_JSON = "config.json"


class ManyLangsConfigError(ValueError):
    """A model directory whose configuration cannot be found or used."""


@dataclasses.dataclass(frozen=True)
class ManyLangsModelConfig:
    """The model configuration, checked, as plain numbers.

    Args:
        source: where it was read, a path or ``packaged:<name>``.
        projection_dim / lstm_dim / n_layers: the encoder's P, C and L.
        cell_clip / proj_clip: the clips. None where upstream does not
            clip, for a falsy value.
        activation: ``"relu"`` or ``"tanh"``, after the convolutions' max.
        filters: ``((width, count), ...)``.
        n_highway: highway layers.
        word_dim: the word embedding size, 0 for no word part.
        char_dim: the char embedding size, > 0.
        max_characters_per_token: chars per token row, markers included.
        dropout: the config's dropout, for training only.
    """

    source: str
    projection_dim: int
    lstm_dim: int
    n_layers: int
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    activation: str
    filters: Tuple[Tuple[int, int], ...]
    n_highway: int
    word_dim: int
    char_dim: int
    max_characters_per_token: int
    dropout: float


def resolve_config_path(model_dir: str | os.PathLike,
                        config_path: str) -> str:
    """Where upstream finds the model configuration named ``config_path``.

    Returns:
        An existing file's path, or ``packaged:<file name>`` for one of
        :data:`PACKAGED_CONFIGS`. A fallback is logged as a warning, as
        upstream does.

    Raises:
        ManyLangsConfigError: found in none of the three places.
    """
    model_dir = os.fspath(model_dir)
    given = os.path.join(model_dir, config_path)
    if os.path.isfile(given):
        return given
    name = os.path.basename(given)
    inside = os.path.join(model_dir, name)
    if name and os.path.isfile(inside):
        logger.warning("%s not found; using %s", given, inside)
        return inside
    if name in PACKAGED_CONFIGS:
        logger.warning("%s not found; using upstream's packaged %s",
                       given, name)
        return f"packaged:{name}"
    raise ManyLangsConfigError(
        f"{os.path.join(model_dir, CONFIG_JSON)}: field 'config_path': "
        f"expected a model config at {given}, at {inside} or one of "
        f"upstream's {', '.join(PACKAGED_CONFIGS)}, found {config_path!r} "
        "in none of them"
    )


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise ManyLangsConfigError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ManyLangsConfigError(
            f"{path}: expected a JSON object, found invalid JSON ({e})"
        ) from None
    if not isinstance(value, dict):
        raise ManyLangsConfigError(
            f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


class _Fields:
    """Typed look-ups in a JSON object, errors naming file and field."""

    def __init__(self, source: str, data: dict):
        self.source = source
        self.data = data

    def fail(self, field: str, expected: str, found) -> ManyLangsConfigError:
        return ManyLangsConfigError(
            f"{self.source}: field {field!r}: expected {expected}, "
            f"found {found!r}")

    def get(self, field: str):
        value = self.data
        for part in field.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ManyLangsConfigError(
                    f"{self.source}: field {field!r}: expected it, found no "
                    "such field")
            value = value[part]
        return value

    def integer(self, field: str, minimum: int) -> int:
        value = self.get(field)
        if isinstance(value, bool) or not isinstance(value, int) \
                or value < minimum:
            raise self.fail(field, f"an integer >= {minimum}", value)
        return value

    def clip(self, field: str) -> Optional[float]:
        value = self.get(field)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value < 0:
            raise self.fail(field, "a number >= 0 or null", value)
        # upstream clips only when the value is truthy
        return float(value) if value else None


def parse_model_config(source: str, data: dict) -> ManyLangsModelConfig:
    """Checks an upstream model configuration (the JSON object)."""
    f = _Fields(source, data)
    name = f.get("encoder.name")
    if name != "elmo":
        raise ManyLangsConfigError(
            f"{source}: field 'encoder.name': found {name!r}, not supported "
            "(expected 'elmo'; upstream's 'lstm' encoder is another model)")
    name = f.get("token_embedder.name")
    if not isinstance(name, str) or name.lower() != "cnn":
        raise ManyLangsConfigError(
            f"{source}: field 'token_embedder.name': found {name!r}, not "
            "supported (expected 'cnn'; upstream's 'lstm' token embedder is "
            "another model)")
    char_dim = f.integer("token_embedder.char_dim", 0)
    if char_dim == 0:
        raise ManyLangsConfigError(
            f"{source}: field 'token_embedder.char_dim': found 0 (a model "
            "without characters), not supported (expected > 0)")
    activation = f.get("token_embedder.activation")
    if activation not in ("relu", "tanh"):
        raise f.fail("token_embedder.activation", "'relu' or 'tanh'",
                     activation)
    filters = f.get("token_embedder.filters")
    if not (isinstance(filters, list) and filters and all(
            isinstance(pair, list) and len(pair) == 2
            and all(type(n) is int and n > 0 for n in pair)
            for pair in filters)):
        raise f.fail("token_embedder.filters",
                     "a list of [width, count] positive integer pairs",
                     filters)
    max_chars = f.integer("token_embedder.max_characters_per_token", 1)
    # '<bos>' alone takes 7 slots with its markers (upstream asserts it)
    widest = max(w for w, _ in filters)
    if max_chars < max(7, widest):
        raise f.fail("token_embedder.max_characters_per_token",
                     f"an integer >= {max(7, widest)} (the <bos> row and "
                     "the widest filter)", max_chars)
    dropout = f.get("dropout")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout < 1:
        raise f.fail("dropout", "a number in [0, 1)", dropout)
    return ManyLangsModelConfig(
        source=source,
        projection_dim=f.integer("encoder.projection_dim", 1),
        lstm_dim=f.integer("encoder.dim", 1),
        n_layers=f.integer("encoder.n_layers", 1),
        cell_clip=f.clip("encoder.cell_clip"),
        proj_clip=f.clip("encoder.proj_clip"),
        activation=activation,
        filters=tuple((w, n) for w, n in filters),
        n_highway=f.integer("token_embedder.n_highway", 0),
        word_dim=f.integer("token_embedder.word_dim", 0),
        char_dim=char_dim,
        max_characters_per_token=max_chars,
        dropout=float(dropout),
    )


def read_model_config(model_dir: str | os.PathLike) -> ManyLangsModelConfig:
    """``model_dir/config.json`` -> the checked model configuration.

    Raises:
        ManyLangsConfigError: no ``config.json``, no ``config_path`` in it,
            a config found nowhere, or a field that does not fit.
    """
    model_dir = os.fspath(model_dir)
    config_json = os.path.join(model_dir, CONFIG_JSON)
    if not os.path.isfile(config_json):
        raise ManyLangsConfigError(
            f"{config_json}: expected ELMoForManyLangs' training arguments "
            "(with 'config_path'), found no such file")
    config_path = _Fields(config_json, _read_json(config_json)).get(
        "config_path")
    if not isinstance(config_path, str):
        raise ManyLangsConfigError(
            f"{config_json}: field 'config_path': expected a path, found "
            f"{config_path!r}")
    source = resolve_config_path(model_dir, config_path)
    if source.startswith("packaged:"):
        data = PACKAGED_CONFIGS[source.split(":", 1)[1]]
    else:
        data = _read_json(source)
    return parse_model_config(source, data)
