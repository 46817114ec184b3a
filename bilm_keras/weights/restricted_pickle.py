"""What a restricted unpickler hands a pickle for the globals it allows:
the part :mod:`~bilm_keras.weights.torch_pickle` and
:mod:`~bilm_keras.weights.paddle_pdparams` share.

Each reader maps the (module, name) pairs it allows to a
:class:`CallableGlobal` or a :class:`NamedGlobal`. A
:class:`CallableGlobal` is a function of the reader, called with the
pickle's arguments. A :class:`NamedGlobal` is a name the pickle may pass
around but never call. Anything either is asked to do beyond that raises
:class:`Refused`, which the reader turns into one line naming the file.
Neither lets a pickle's BUILD set its state: on a bare function or class
that would set attributes (``__defaults__``...) for the whole process and
change how later files are read.
"""

from __future__ import annotations

import pickle
from typing import Callable


class Refused(Exception):
    """Raised inside a restricted unpickler, then given the file by a reader."""


class NamedGlobal:
    """A global the pickle may name but never call (``numpy.ndarray``, a
    storage type): calling it is refused like an unknown global."""

    __slots__ = ("qualname",)

    def __init__(self, qualname: str):
        self.qualname = qualname

    def __call__(self, *args, **kwargs):
        raise Refused(f"a call to {self.qualname}")

    def __setstate__(self, state):
        raise Refused(f"state set on {self.qualname}")

    def __repr__(self):
        return self.qualname


class CallableGlobal:
    """An allowed global the pickle may call: ``function``, behind an
    object whose state cannot be set."""

    __slots__ = ("qualname", "function")

    def __init__(self, qualname: str, function: Callable):
        self.qualname = qualname
        self.function = function

    def __call__(self, *args):
        return self.function(*args)

    def __setstate__(self, state):
        raise Refused(f"state set on {self.qualname}")

    def __repr__(self):
        return self.qualname


#: reads of up to this many bytes are checked after reading: they allocate
#: no more than this, and nearly every read is one opcode's few bytes
_SMALL_READ = 1 << 16


class BoundedFile:
    """A binary file an unpickler reads, refusing a read of more bytes than
    the file has left.

    An opcode or frame that claims gigabytes is refused as a file cut
    short, ``EOFError``, before a buffer of that size is allocated. A small
    read is checked after it, which costs a protocol 2 pickle's
    one-byte reads half as much.
    """

    def __init__(self, file, size: int):
        self._file = file
        self._size = size

    def _cut_short(self, n: int, position: int, left: int) -> EOFError:
        return EOFError(f"an opcode claiming {n} bytes at byte {position}, "
                        f"where {left} are left")

    def _check(self, n: int) -> None:
        position = self._file.tell()
        if n > self._size - position:
            raise self._cut_short(n, position, self._size - position)

    def read(self, n: int = -1) -> bytes:
        # n < 0 reads the rest, which the file holds
        if n > _SMALL_READ:
            self._check(n)
        data = self._file.read(n)
        if len(data) < n:
            raise self._cut_short(n, self._file.tell() - len(data),
                                  len(data))
        return data

    def readinto(self, buffer) -> int:
        self._check(memoryview(buffer).nbytes)
        return self._file.readinto(buffer)

    def readline(self) -> bytes:
        return self._file.readline()


def _refuse_bytearray8(unpickler) -> None:
    raise Refused("a BYTEARRAY8 (an out-of-band buffer: neither torch's nor "
                  "Paddle's files hold one)")


class RestrictedUnpickler(pickle._Unpickler):
    """pickle's Python unpickler, the base of each reader's.

    The C one grows its memo to the largest index a PUT names and zeroes
    it, so a few bytes asking for index 2**28 allocate 4 GiB. The Python
    one keeps a dict. Its BYTEARRAY8, which allocates the length it reads
    before reading, is refused.
    """

    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BYTEARRAY8[0]] = _refuse_bytearray8
