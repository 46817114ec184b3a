"""Settings values: the error that names a field, and the checks of a
field's value that several values share. Pure Python, no numpy needed.

A settings value such as ``EmbeddingSpec`` or ``TrainingRun`` is a frozen
dataclass checked once, when it is built. A bad field raises
:class:`SettingError`, whose :attr:`~SettingError.field` is the field's
name. So a caller, e.g. the ``bilm-keras`` command, can say which of its
own flags was wrong without reading the message.
"""

from __future__ import annotations

import math
import numbers


class SettingError(ValueError):
    """A setting with a value it cannot take.

    ``str(error)`` is ``"FIELD: REASON"`` (e.g. ``"gamma: expected a
    finite number, found nan"``).

    Attributes:
        field: the field's (the keyword argument's) name.
        reason: what was expected and what was found, without the name.
    """

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def __reduce__(self):  # picklable (multiprocessing, Beam workers)
        return type(self), (self.field, self.reason)


def is_int(value) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_positive_int(value) -> bool:
    """An integer >= 1 (not a bool)."""
    return is_int(value) and value >= 1


def is_finite_number(value) -> bool:
    """A real number (Python's or numpy's), finite, not a bool."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and type(value).__name__ != "bool_" and math.isfinite(value))


def check_int(field: str, value, minimum: int, *, optional: bool = False,
              maximum: int | None = None) -> None:
    """Raises :class:`SettingError` unless ``value`` is an integer in
    ``minimum..maximum`` (or None, when ``optional``)."""
    if value is None and optional:
        return
    if not is_int(value) or value < minimum or (
            maximum is not None and value > maximum):
        allowed = (f"an integer >= {minimum}" if maximum is None
                   else f"an integer in {minimum}..{maximum}")
        if optional:
            allowed += " or None"
        raise SettingError(field, f"expected {allowed}, found {value!r}")


def check_choice(field: str, value, choices) -> None:
    """Raises :class:`SettingError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        names = [repr(c) for c in choices]
        allowed = (" or ".join(names) if len(names) == 2
                   else f"one of {', '.join(names)}")
        raise SettingError(field, f"expected {allowed}, found {value!r}")
