"""Many problems in one line of an error message: the first few, then how
many more. A checkpoint that does not fit a model can miss every one of
its variables: the line names six and counts the rest.

::

    raise CheckpointError(f"{path} does not fit the model: "
                          + problem_list(fit_problems(expected, stored)))
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

#: problems named in full before the rest are only counted
MOST_NAMED = 6


def problem_list(problems: Sequence[str], most: int = MOST_NAMED) -> str:
    """``problems`` joined by ``"; "``, at most ``most`` of them, then
    ``"; and N more"`` where there are more."""
    more = len(problems) - most
    return "; ".join(problems[:most]) + (f"; and {more} more" if more > 0
                                         else "")


def name_list(names: Sequence, most: int = MOST_NAMED,
              empty: str = "none") -> str:
    """The first ``most`` of ``names`` joined by ``", "``, then ``", ..."``
    where there are more, or ``empty`` where there are none.

    Example:
        >>> name_list(["a", "b", "c"], most=2)
        'a, b, ...'
    """
    if len(names) == 0:
        return empty
    return (", ".join(map(str, names[:most]))
            + (", ..." if len(names) > most else ""))


def fit_problems(expected: Mapping[str, tuple],
                 stored: Mapping[str, tuple],
                 extra: Optional[Iterable[str]] = None) -> list:
    """One line for each variable of ``expected`` that ``stored`` lacks or
    holds in another shape, then one for each stored name no variable
    takes: what every checkpoint reader says of a file that does not fit.

    Args:
        expected: dict. The model's variables' names and shapes.
        stored: dict. The checkpoint's names and shapes.
        extra: iterable of str or None. The stored names that each need a
            variable, in the order to name them. None means all of
            ``stored``.

    Example:
        >>> stored = {"a": (4,), "c": (1,)}
        >>> for line in fit_problems({"a": (2,), "b": (3,)}, stored):
        ...     print(line)
        a: options give shape (2,), checkpoint has (4,)
        b: options give shape (3,), checkpoint has none
        c: in the checkpoint (1,), not in the model the options describe
    """
    problems = [
        f"{name}: options give shape {shape}, checkpoint has "
        f"{'none' if stored.get(name) is None else stored[name]}"
        for name, shape in expected.items() if stored.get(name) != shape]
    problems += [
        f"{name}: in the checkpoint {stored[name]}, not in the model the "
        "options describe"
        for name in (stored if extra is None else extra)
        if name not in expected]
    return problems
