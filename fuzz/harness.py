"""What must hold for every input a target reads, checked in-process.

:func:`check` runs one target on one input and returns None when every
property holds, else one line saying which did not:

* only the target's documented errors escape, with a one-line message
  (any other exception, ``MemoryError`` and ``RecursionError`` included, is
  a finding);
* the address space grows by at most a bound tied to the input's size
  (``RLIMIT_AS``, set for the call and lifted after it);
* the call ends within the target's time (``SIGALRM``);
* nothing is written outside the folder given to the target, and no more
  bytes than the bound there;
* no code runs: ``os.system``, ``subprocess.Popen``, ``eval``, ``exec``
  and the other callables a pickle could aim at are tripwires while the
  target runs, and so is :func:`tripwire`, which the structured
  mutations aim ``GLOBAL`` opcodes at.

A crash (a segfault, an abort) cannot be caught in-process: the callers
run targets in a child process (libFuzzer's own, or
:mod:`fuzz.replay`'s) and count its death as a finding.
"""

from __future__ import annotations

import builtins
import linecache
import os
import resource
import shutil
import signal
import subprocess
import sys
from typing import Callable, Dict, List, Optional

#: an absolute folder the hostile archives aim members at; it must never
#: appear
ABSOLUTE_CANARY = "/tmp/bilm_keras_fuzz_absolute"
#: allowed growth of the address space: this plus FACTOR bytes per input
#: byte (the readers copy a file a few times at most)
BASE_BYTES = 256 << 20
FACTOR = 16


#: exception names that, inside a documented error's message, say the
#: reader caught a blown memory bound rather than refusing the input
#: before allocating
_HIDDEN = ("MemoryError",)


class CanaryTripped(BaseException):
    """Raised by a tripwire; a BaseException, so no reader swallows it."""


class _Timeout(BaseException):
    """Raised by SIGALRM when an input takes longer than its target's
    time."""


_TRIPPED: List[str] = []


def tripwire(*args, **kwargs):
    """A callable any pickle may name: calling it is running code."""
    _TRIPPED.append("fuzz.harness.tripwire")
    raise CanaryTripped("fuzz.harness.tripwire")


#: modules whose own calls of exec / eval are Python at work (an import,
#: a dataclass or namedtuple made on first use), not a file's code
_PYTHON_MACHINERY = ("importlib._bootstrap", "importlib._bootstrap_external",
                     "dataclasses", "collections", "typing", "enum")


def _trap(name: str, original: Callable) -> Callable:
    """``original``, except when called by a pickle: a call from a line of
    Python that names it (``np.fromfile(...)`` in a reader) or from
    Python's own machinery is the program's; a global a pickle calls is
    called from the line that runs the unpickler, which does not."""
    machinery = name in ("builtins.exec", "builtins.eval")
    short = name.rsplit(".", 1)[1]

    def trapped(*args, **kwargs):
        frame = sys._getframe(1)
        if machinery and frame.f_globals.get("__name__") in (
                _PYTHON_MACHINERY):
            return original(*args, **kwargs)
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        if short in line:
            return original(*args, **kwargs)
        _TRIPPED.append(name)
        raise CanaryTripped(name)
    return trapped


def warm_up(target, workspace: "Workspace") -> None:
    """Runs ``target`` once on its first seed, unchecked: what it imports
    on first use (and what those imports run) is imported before the
    tripwires are set."""
    workspace.reset()
    target.write_inputs(target.seeds()[0], workspace.inputs)
    try:
        target.run(workspace.inputs, workspace.out)
    except Exception:  # noqa: BLE001 -- a seed is checked by the replay
        pass


#: (owner, attribute, name): the callables trapped while a target runs
_TRAPS = [
    (os, "system", "os.system"),
    (os, "popen", "os.popen"),
    (os, "execv", "os.execv"),
    (os, "execve", "os.execve"),
    (os, "posix_spawn", "os.posix_spawn"),
    (subprocess, "Popen", "subprocess.Popen"),
    (builtins, "eval", "builtins.eval"),
    (builtins, "exec", "builtins.exec"),
    (builtins, "breakpoint", "builtins.breakpoint"),
]


def _numpy_traps():
    import numpy as np
    # a pickle naming numpy.load would read a file the user never named
    return [(np, "load", "numpy.load"), (np, "fromfile", "numpy.fromfile")]


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _tree_bytes(folder: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _snapshot(folder: str) -> dict:
    found = {}
    for dirpath, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            found[path] = (st.st_size, st.st_mtime_ns)
    return found


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text.strip()


def scratch_root() -> Optional[str]:
    """A folder in memory for workspaces (``/dev/shm``), or None for the
    system's temporary folder: a workspace is rewritten for every input,
    and a disk's ``rmdir``, ``unlink`` and ``fsync`` can cost more than
    the reader."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


class Workspace:
    """``root/in`` (the input's files, written by the target) and
    ``root/out`` (the folder the target may write into); nothing else may
    appear under ``root``."""

    def __init__(self, root: str):
        self.root = root
        self.inputs = os.path.join(root, "in")
        self.out = os.path.join(root, "out")
        #: what ``in`` holds when a check found it as written, else None
        self._held: Optional[Dict[str, bytes]] = None
        self._written: Optional[Dict[str, bytes]] = None

    def reset(self) -> None:
        self._held = None
        for path in (self.inputs, self.out):
            shutil.rmtree(path, ignore_errors=True)
            os.makedirs(path)
        self._remove_others()

    def _remove_others(self) -> None:
        for name in os.listdir(self.root):
            if name not in ("in", "out"):
                path = os.path.join(self.root, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)

    def write(self, files: Dict[str, bytes]) -> None:
        """Leaves ``in`` holding ``files`` (name -> bytes) and ``out``
        empty.

        When the last check found ``in`` as written, only the files that
        differ are written again: a folder target's input changes one file
        of many.
        """
        held, self._held = self._held, None
        if held is None or held.keys() != files.keys():
            self.reset()
            changed = files
        else:
            shutil.rmtree(self.out, ignore_errors=True)
            os.makedirs(self.out)
            self._remove_others()
            changed = {name: data for name, data in files.items()
                       if held[name] is not data and held[name] != data}
        for name, data in changed.items():
            path = os.path.join(self.inputs, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        self._written = files

    def found_as_written(self) -> None:
        """Records that a check found ``in`` as :meth:`write` left it."""
        self._held = self._written


def check(target, data: bytes, workspace: Workspace, *,
          alarm: bool = True) -> Optional[str]:
    """Runs ``target`` on ``data``: None when every property holds, else
    one line naming the one that did not.

    ``alarm=False`` leaves the time to the caller (libFuzzer's
    ``-timeout``, which owns ``SIGALRM`` under atheris)."""
    workspace.write(target.input_files(data))
    shutil.rmtree(ABSOLUTE_CANARY, ignore_errors=True)
    before = _snapshot(workspace.inputs)
    bound = BASE_BYTES + target.memory_bytes + FACTOR * len(data)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    traps = _TRAPS + _numpy_traps()
    saved = [getattr(owner, attr) for owner, attr, _ in traps]
    del _TRIPPED[:]
    finding = None
    previous = signal.signal(signal.SIGALRM, _alarm) if alarm else None
    limit = min(_address_space() + bound, hard) if hard > 0 else (
        _address_space() + bound)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        for (owner, attr, name), value in zip(traps, saved):
            setattr(owner, attr, _trap(name, value))
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, target.seconds)
        try:
            target.run(workspace.inputs, workspace.out)
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
            for (owner, attr, _), value in zip(traps, saved):
                setattr(owner, attr, value)
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except target.errors as e:
        if any(name in str(e) for name in _HIDDEN):
            # the reader turned a blown bound into its own error
            finding = f"{type(e).__name__} over a hidden bound: {str(e)[:200]}"
        elif not _one_line(str(e)):
            finding = (f"{type(e).__name__} with a message of "
                       f"{len(str(e).strip().splitlines())} lines: "
                       f"{str(e)[:200]!r}")
    except CanaryTripped as e:
        finding = f"code ran: {e} was called"
    except _Timeout:
        finding = f"took longer than {target.seconds} s"
    except MemoryError:
        finding = (f"MemoryError: the address space grew past {bound} "
                   f"bytes for an input of {len(data)}")
    except RecursionError as e:
        finding = f"RecursionError: {str(e)[:200]}"
    except BaseException as e:  # noqa: BLE001 -- every escape is a finding
        if isinstance(e, KeyboardInterrupt):
            raise
        text = str(e).strip().splitlines()
        finding = (f"{type(e).__name__} escaped: "
                   f"{text[0][:200] if text else ''}")
    finally:
        if alarm:
            signal.signal(signal.SIGALRM, previous)
    if finding is None and _TRIPPED:
        finding = f"code ran: {_TRIPPED[0]} was called (and caught)"
    if finding is None:
        finding = _written_outside(workspace, before, bound)
    if finding is None:
        workspace.found_as_written()
    return finding


def _alarm(signum, frame):
    raise _Timeout()


def _written_outside(workspace: Workspace, before: dict,
                     bound: int) -> Optional[str]:
    extra = sorted(set(os.listdir(workspace.root)) - {"in", "out"})
    if extra:
        return f"wrote {extra[0]!r} outside the folder it was given"
    if os.path.lexists(ABSOLUTE_CANARY):
        return f"wrote {ABSOLUTE_CANARY} (an absolute path)"
    if _snapshot(workspace.inputs) != before:
        return "changed its input files"
    written = _tree_bytes(workspace.out)
    if written > bound:
        return f"wrote {written} bytes, more than the bound {bound}"
    return None


def run_quietly() -> None:
    """Silences the package's logging and TensorFlow's, for a child that
    runs thousands of inputs."""
    import logging

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    logging.getLogger("bilm_keras").setLevel(logging.CRITICAL)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
