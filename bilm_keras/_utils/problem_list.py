"""Many problems in one line of an error message: the first few, then how
many more (a checkpoint that does not fit a model can miss every one of
its variables; the line names six and counts the rest).

::

    raise CheckpointError(f"{path} does not fit the model: "
                          + problem_list(problems))
"""

from __future__ import annotations

from typing import Sequence

#: problems named in full before the rest are only counted
MOST_NAMED = 6


def problem_list(problems: Sequence[str], most: int = MOST_NAMED) -> str:
    """``problems`` joined by ``"; "``, at most ``most`` of them, then
    ``"; and N more"`` where there are more."""
    more = len(problems) - most
    return "; ".join(problems[:most]) + (f"; and {more} more" if more > 0
                                         else "")
