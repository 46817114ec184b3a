"""A model's learned layer mix, ``mix.json``: the one definition of that
file.

A model converted from a TF1 Hub module keeps the mix the module learned,
``elmo = gamma * sum_k softmax(mix_logits)_k * h_k``, beside its
``options.json`` and ``lm_weights.hdf5``::

    {"mix_logits": [0.3, -0.5, 1.1], "gamma": 0.75}

``mix_logits`` are the raw weights, one per layer, the token layer first
(bilm-tf's ``{name}_ELMo_W``, Google's ``aggregation/weights``), and
``gamma`` the scale. ``embed_sentences(output="mix")`` with no mix of its
own uses them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Optional, Tuple

from bilm_keras._utils.atomic_files import write_text_atomic

MIX_FILE = "mix.json"


class LearnedMixError(ValueError):
    """A ``mix.json`` that is not a learned mix."""


@dataclasses.dataclass(frozen=True)
class LearnedMix:
    """A learned layer mix.

    Attributes:
        mix_logits: tuple of float. The raw weights, one per layer.
        gamma: float. The scale.
    """

    mix_logits: Tuple[float, ...]
    gamma: float

    def to_json(self) -> str:
        return json.dumps({"mix_logits": list(self.mix_logits),
                           "gamma": self.gamma}, indent=2) + "\n"


def write_mix(path: str | os.PathLike, mix: LearnedMix) -> None:
    """Writes ``mix`` to ``path`` atomically."""
    write_text_atomic(path, mix.to_json())


def _finite(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def read_mix(path: str | os.PathLike) -> LearnedMix:
    """The mix in ``path``.

    Raises:
        LearnedMixError: not JSON, or a field missing or not finite
            numbers (the file, the field, what was expected and found).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise LearnedMixError(f"{path}: expected a JSON mix, cannot read "
                              f"it ({e})") from None
    logits = data.get("mix_logits") if isinstance(data, dict) else None
    if (not isinstance(logits, list) or not logits
            or not all(_finite(x) for x in logits)):
        raise LearnedMixError(
            f"{path}: mix_logits: expected a non-empty list of finite "
            f"numbers, found {logits!r}")
    gamma = data.get("gamma")
    if not _finite(gamma):
        raise LearnedMixError(
            f"{path}: gamma: expected a finite number, found {gamma!r}")
    return LearnedMix(tuple(float(x) for x in logits), float(gamma))


def mix_beside(folder: str | os.PathLike) -> Optional[LearnedMix]:
    """The ``mix.json`` in ``folder``, or None where there is none."""
    path = os.path.join(os.fspath(folder), MIX_FILE)
    return read_mix(path) if os.path.isfile(path) else None
