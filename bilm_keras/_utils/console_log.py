"""The library's lines, through ``logging``: what a program that trains or
embeds sees, and how it silences or redirects it.

Every module of ``bilm_keras`` reports through
``logging.getLogger(__name__)``. There is no ``print`` outside the
command, ``bilm_keras.cli``, and the progress bar. Progress lines and
results go at ``INFO``, what needs a look at ``WARNING``, details at
``DEBUG``.

So that a script sees what the command shows, importing ``bilm_keras``
gives the ``"bilm_keras"`` logger one :class:`ConsoleHandler` and the
level ``INFO``. TensorFlow likewise gives ``tf.get_logger()`` its own
handler. ``INFO`` lines go to stdout, the message alone. Warnings and the
download notes of ``bilm_keras.pretrained``, a ``.progress`` logger, go to
stderr. To change that::

    import logging
    logging.getLogger("bilm_keras").setLevel(logging.WARNING)  # quieter
    logging.disable(logging.CRITICAL)  # silent (every library's lines)
    # redirect: your handlers instead of ours
    logger = logging.getLogger("bilm_keras")
    logger.removeHandler(bilm_keras._utils.console_log.CONSOLE_HANDLER)
    logger.addHandler(logging.FileHandler("run.log"))
    # or to the root logger's handlers (logging.basicConfig)
    logger.propagate = True

``bilm-keras --quiet`` sets ``WARNING``, ``--verbose`` ``DEBUG``
(:func:`set_console_level`).
"""

from __future__ import annotations

import logging
import sys

#: the package's logger name
LOGGER = "bilm_keras"
#: a logger whose name ends so writes to stderr at any level (progress
#: notes, like the progress bar, stay off stdout)
PROGRESS_SUFFIX = ".progress"


class ConsoleHandler(logging.Handler):
    """The message alone, on ``sys.stdout`` below ``WARNING``, else on
    ``sys.stderr``.

    ``sys.stdout`` is read at each record, so a redirected stream is
    followed. A ``.progress`` logger's records go to stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        to_stderr = (record.levelno >= logging.WARNING
                     or record.name.endswith(PROGRESS_SUFFIX))
        stream = sys.stderr if to_stderr else sys.stdout
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's own rule)
            self.handleError(record)


#: the handler importing ``bilm_keras`` installs (remove it to redirect)
CONSOLE_HANDLER = ConsoleHandler()


def install_console_handler() -> None:
    """Gives the package's logger :data:`CONSOLE_HANDLER` and ``INFO``,
    once. A level the program set is kept.

    Its records do not also go to the root logger's handlers. A handler
    there, from ``basicConfig`` or one a library sets up, would print every
    line twice."""
    logger = logging.getLogger(LOGGER)
    if CONSOLE_HANDLER not in logger.handlers:
        logger.addHandler(CONSOLE_HANDLER)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)


def set_console_level(*, verbose: bool = False, quiet: bool = False) -> int:
    """The package's level for a command: ``DEBUG`` with ``verbose``,
    ``WARNING`` with ``quiet``, else ``INFO``. Returns the level before
    (:func:`restore_console_level`)."""
    logger = logging.getLogger(LOGGER)
    previous = logger.level
    logger.setLevel(logging.DEBUG if verbose else
                    logging.WARNING if quiet else logging.INFO)
    return previous


def restore_console_level(level: int) -> None:
    """Sets the package's level back (after a command run in-process)."""
    logging.getLogger(LOGGER).setLevel(level)
