"""TensorFlow's settings for this CPU's class, chosen once, before
TensorFlow is imported.

The same code runs at different speeds on different CPUs. The flags of
``/proc/cpuinfo`` sort a CPU into one of four classes, and each class
gets the settings measured fastest on it:

==========  =============================  ==========  ================
class       flags                          oneDNN      TensorFlow's own
==========  =============================  ==========  ================
``amx``     ``amx_tile``                   on          on
``avx512``  ``avx512f``, no AMX            on          on with VNNI or
                                                       BF16, else off
``avx2``    ``avx2`` and ``fma``, no       on          on with
            AVX-512                                    ``avx_vnni``,
                                                       else off
``other``   none of these, or not x86      its own     its own
==========  =============================  ==========  ================

oneDNN (``TF_ENABLE_ONEDNN_OPTS``) is the one setting that differs from
TensorFlow's own choice. TensorFlow 2.21 turns it on only for CPUs with
VNNI, BF16 or AMX. On an AVX2-only AMD EPYC (family 25) that leaves it
off, and there oneDNN trains the mid-size biLM about 2x faster and embeds
1.13x faster (``bench/RESULTS.md``, 2026-11-29). On the AVX-512 and AMX
machines measured, TensorFlow already turns it on, so nothing changes
there. The training thread pools are chosen by the number of cores, in
:mod:`bilm_keras.training.threads`, the same for every class.

TensorFlow reads ``TF_ENABLE_ONEDNN_OPTS`` once, when it is imported. So
``import bilm_keras`` sets it when it is unset, before TensorFlow is
imported; the ``bilm-keras`` command imports ``bilm_keras`` first, so it
does too. The user's choice wins: a value set before, ``0`` or ``1``, is
kept. A program that imported TensorFlow before ``bilm_keras`` keeps the
setting its import read. If that is slower than this class's choice,
one warning says what to set. The choice is logged once, at ``DEBUG``,
and ``bilm-keras --verbose`` prints what TensorFlow runs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from typing import Callable, Iterable, MutableMapping, Optional

from bilm_keras._utils.fast_precision import cpu_flags

logger = logging.getLogger(__name__)

#: the variable TensorFlow reads at its import: oneDNN on (1) or off (0)
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"

#: the classes, fastest first
CLASSES = ("amx", "avx512", "avx2", "other")

#: the flags under which TensorFlow turns oneDNN on by itself on Linux
#: (``DefaultOneDnnPolicy`` in ``tensorflow/core/util/port.cc``)
TENSORFLOW_ONEDNN_FLAGS = frozenset({
    "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8",
    "amx_bf16"})

#: class -> oneDNN on (True), off (False) or TensorFlow's own (None)
ONEDNN_BY_CLASS = {"amx": True, "avx512": True, "avx2": True,
                   "other": None}

_warned = False


@dataclasses.dataclass(frozen=True)
class CPUSettings:
    """The settings chosen for one CPU.

    Args:
        cpu_class: str. One of :data:`CLASSES`.
        onednn: bool or None. oneDNN on or off, None for TensorFlow's own.
        tensorflow_onednn: bool. What TensorFlow picks by itself here.
    """

    cpu_class: str
    onednn: Optional[bool]
    tensorflow_onednn: bool

    @classmethod
    def for_flags(cls, flags: Iterable[str]) -> "CPUSettings":
        """The settings for a CPU with these ``/proc/cpuinfo`` flags."""
        flags = frozenset(flags)
        cpu_class = classify(flags)
        return cls(cpu_class=cpu_class, onednn=ONEDNN_BY_CLASS[cpu_class],
                   tensorflow_onednn=bool(flags & TENSORFLOW_ONEDNN_FLAGS))

    def environment(self) -> dict:
        """The variables to set before TensorFlow's import: only those
        whose choice differs from TensorFlow's own."""
        if self.onednn is None or self.onednn == self.tensorflow_onednn:
            return {}
        return {ONEDNN_VARIABLE: "1" if self.onednn else "0"}

    def describe(self) -> str:
        """One line: the class and the choice."""
        if self.onednn is None:
            return f"CPU class {self.cpu_class}: TensorFlow's own settings"
        state = "on" if self.onednn else "off"
        source = ("TensorFlow's default here" if not self.environment()
                  else f"{ONEDNN_VARIABLE}={int(self.onednn)}")
        return f"CPU class {self.cpu_class}: oneDNN {state} ({source})"


def classify(flags: Iterable[str]) -> str:
    """The class (:data:`CLASSES`) of a CPU with these flags."""
    flags = frozenset(flags)
    if "amx_tile" in flags:
        return "amx"
    if "avx512f" in flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "other"


def apply_cpu_settings(
    flags: Optional[Iterable[str]] = None,
    environ: Optional[MutableMapping[str, str]] = None,
    running: Optional[Callable[[], Optional[bool]]] = None,
) -> CPUSettings:
    """Sets this CPU class's variables before TensorFlow is imported.

    A ``TF_ENABLE_ONEDNN_OPTS`` already set is kept. If TensorFlow is
    already imported, nothing is set, and one warning is logged if it
    runs with a oneDNN setting other than the class's.

    Args:
        flags: the CPU's flags. Default: ``/proc/cpuinfo``'s.
        environ: the environment to set. Default: ``os.environ``.
        running: whether the imported TensorFlow runs oneDNN, None when
            it is not imported. Default: :func:`tensorflow_onednn`.

    Returns:
        The settings chosen for this CPU (applied or not).
    """
    environ = os.environ if environ is None else environ
    running = tensorflow_onednn if running is None else running
    settings = CPUSettings.for_flags(cpu_flags() if flags is None else flags)
    imported = running()
    if ONEDNN_VARIABLE in environ:
        logger.debug("%s; %s=%s kept, as set", settings.describe(),
                     ONEDNN_VARIABLE, environ[ONEDNN_VARIABLE])
    elif imported is not None:
        _warn_if_slower(settings, imported)
    else:
        environ.update(settings.environment())
        logger.debug("%s", settings.describe())
    return settings


def tensorflow_onednn() -> Optional[bool]:
    """Whether the imported TensorFlow runs oneDNN (None when it is not
    imported: nothing is imported to find out)."""
    if "tensorflow" not in sys.modules:
        return None
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def running_settings() -> str:
    """One line: this CPU's class, and whether the imported TensorFlow
    runs oneDNN and why."""
    settings = CPUSettings.for_flags(cpu_flags())
    running = tensorflow_onednn()
    if running is None:
        return f"{settings.describe()}; TensorFlow not imported"
    state = "on" if running else "off"
    value = os.environ.get(ONEDNN_VARIABLE)
    source = ("TensorFlow's default" if value is None
              else f"{ONEDNN_VARIABLE}={value}")
    return (f"CPU class {settings.cpu_class}: TensorFlow runs oneDNN "
            f"{state} ({source})")


def _warn_if_slower(settings: CPUSettings, running: bool) -> None:
    """One warning per process when TensorFlow runs (``running``) with a
    oneDNN setting other than the class's."""
    global _warned
    if _warned or settings.onednn in (None, running):
        return
    _warned = True
    logger.warning(
        "TensorFlow was imported before bilm_keras, with oneDNN %s; on "
        "this CPU (class %s) it runs faster %s: set %s=%d before "
        "importing TensorFlow, or import bilm_keras first",
        "on" if running else "off", settings.cpu_class,
        "on" if settings.onednn else "off", ONEDNN_VARIABLE,
        int(settings.onednn))
