"""A served model's name: ``--model NAME=SPEC`` read, and a name checked.
Plain Python, so the command checks its flags before TensorFlow is
imported."""

from __future__ import annotations

import re
from typing import Optional

#: a model's name in ``--model NAME=SPEC`` and in requests
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def parse_model_flag(text: str) -> tuple[Optional[str], str]:
    """``--model``'s value as ``(name, spec)``: ``NAME=SPEC`` names the
    model, a bare SPEC leaves the name to the model (None).

    Raises:
        ValueError: an empty name or spec.
    """
    name, sep, spec = text.partition("=")
    if sep and _NAME.match(name) and spec:
        return name, spec
    if sep and not name:
        raise ValueError(f"--model: expected NAME=SPEC, found {text!r}")
    return None, text


def check_model_name(name: str) -> str:
    """``name`` if it can name a model (letters, digits, ``.``, ``_``,
    ``-``), else a ValueError naming it."""
    if not _NAME.match(name):
        raise ValueError(
            f"--model: expected a name of letters, digits, '.', '_' and "
            f"'-', found {name!r}")
    return name
