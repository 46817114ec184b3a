"""Paddle ``.pdparams`` files read with the standard library and numpy, no
Paddle.

::

    from bilm_keras.weights.paddle_pdparams import read_pdparams
    state = read_pdparams("final.pdparams")   # {name: np.ndarray}

Paddle 2.x's ``paddle.save(layer.state_dict(), path)`` writes one pickle,
protocol 4 by default, of a dict. It maps each parameter's structured name,
such as ``_elmobilm.forward_lstm_layer_0.weight_ih_l0``, to a numpy array.
It also holds ``StructuredToParameterName@@``, a dict of structured name to
Paddle's internal parameter name, such as ``lstm_cell_0.w_0``. Each array
is pickled as numpy pickles it: ``numpy.core.multiarray._reconstruct``,
``numpy._core`` from numpy >= 2, called on ``numpy.ndarray``. Then comes a
state of version, shape, ``numpy.dtype(...)`` with its own state, Fortran
order and raw bytes.

The pickle goes through a restricted unpickler. It looks each global up in
a table of exactly those names: the two ``_reconstruct`` spellings,
``numpy.ndarray``, ``numpy.dtype`` and ``collections.OrderedDict``. Each is
mapped to a function or marker of this module that only records its
arguments. Any other global, such as ``os.system``, ``builtins.eval`` or a
Paddle class, is refused before anything can call it. The refusal is one
line naming the file and the global, so a ``.pdparams`` can hold arrays,
never code.

Arrays come back as numpy arrays of the stored numeric dtype, shape and
values, in native byte order and C order. The dtypes are bool, int, uint
and float16/32/64. An array is a read-only view of the bytes the pickle
holds, with no copy, or a writable copy where the file's byte or element
order differs. Object, string, structured and subarray dtypes are refused.

A file that is not such a pickle, is cut short or holds anything but
strings, numbers, tuples, dicts and arrays raises :class:`PdparamsError`.
Its one line names the file, what was expected and what was found.
"""

from __future__ import annotations

import collections
import math
import os
import pickle
import reprlib
from typing import Any

import numpy as np

from bilm_keras.weights.restricted_pickle import (
    BoundedFile, CallableGlobal, NamedGlobal, Refused, RestrictedUnpickler)

#: the key ``paddle.save`` adds to a state dict: structured name -> the
#: parameter's internal name
STRUCTURED_NAMES_KEY = "StructuredToParameterName@@"
#: the key Paddle adds when it splits arrays over 4 GiB (protocol 2 and 3)
BIG_PARAM_KEY = "UnpackBigParamInfor@@"

#: numpy dtype kinds an array may have (bool, int, uint, float)
_NUMERIC_KINDS = "biuf"


#: a value of the file in a message: nested containers cut short
_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxstring, _repr.maxother = 3, 60, 60
_short = _repr.repr


class PdparamsError(ValueError):
    """A file that is not a ``.pdparams`` state dict of numpy arrays, or that
    asks for anything beyond arrays (one line: file, expected, found)."""


_NDARRAY = NamedGlobal("numpy.ndarray")


class _DType:
    """``numpy.dtype(name, align, copy)``, whose state sets the byte order."""

    __slots__ = ("byte_order", "name")

    def __init__(self, name: str):
        self.name = name
        self.byte_order = "="

    def __setstate__(self, state):
        # (version, byte order, subarray, names, fields, elsize, alignment,
        # flags): a plain numeric dtype has no subarray, names or fields
        if (not isinstance(state, tuple) or len(state) < 5
                or state[1] not in ("<", ">", "|", "=")
                or any(s is not None for s in state[2:5])):
            raise Refused(f"a dtype {self.name!r} with state {_short(state)} "
                           "(expected a plain numeric dtype)")
        self.byte_order = state[1]

    def numpy(self) -> np.dtype:
        dtype = np.dtype(self.name)
        if self.byte_order in "<>":
            dtype = dtype.newbyteorder(self.byte_order)
        return dtype


def _dtype(name, align=False, copy=True) -> _DType:
    """numpy.dtype: only the numeric ones an array of weights has."""
    try:
        ok = isinstance(name, str) and np.dtype(name).kind in _NUMERIC_KINDS
    except TypeError:
        ok = False
    if not ok:
        raise Refused(f"a dtype {_short(name)} (expected a numeric one)")
    return _DType(name)


class _Array:
    """``_reconstruct(ndarray, (0,), b'b')`` and then its state: built into
    a numpy array once the pickle is read."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None

    def __setstate__(self, state):
        # (version, shape, dtype, is_fortran, raw bytes)
        if not (isinstance(state, tuple) and len(state) == 5):
            raise Refused(f"an array state of {type(state).__name__} "
                           "(expected numpy's 5-tuple)")
        _, shape, dtype, fortran, data = state
        if not (isinstance(shape, tuple) and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0
                for n in shape)):
            raise Refused(f"an array shape {_short(shape)}")
        if not isinstance(dtype, _DType):
            raise Refused(f"an array dtype {dtype!r}")
        if not isinstance(data, (bytes, bytearray)):
            raise Refused(f"array data of {type(data).__name__} (expected "
                           "raw bytes)")
        dtype = dtype.numpy()
        size = math.prod(shape)  # Python ints: a huge shape cannot wrap
        if len(data) != size * dtype.itemsize:
            raise Refused(f"an array of shape {shape} {dtype} in "
                           f"{len(data)} bytes (expected "
                           f"{size * dtype.itemsize})")
        array = np.frombuffer(data, dtype=dtype).reshape(
            shape, order="F" if fortran else "C")
        if fortran or not dtype.isnative:
            # native byte order and C order: a copy, writable
            array = np.array(array, dtype=dtype.newbyteorder("="),
                             order="C")
        # else a read-only view of the pickle's bytes: no copy (a released
        # model's softmax alone is 300 MB)
        self.array = array


def _reconstruct(cls, shape, dtype_code) -> _Array:
    """numpy.core.multiarray._reconstruct: an empty array to fill."""
    if cls is not _NDARRAY:
        raise Refused(f"an array of class {cls!r} (expected numpy.ndarray)")
    return _Array()


_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): CallableGlobal(
        "numpy.core.multiarray._reconstruct", _reconstruct),
    ("numpy._core.multiarray", "_reconstruct"): CallableGlobal(
        "numpy._core.multiarray._reconstruct", _reconstruct),
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): CallableGlobal("numpy.dtype", _dtype),
    ("collections", "OrderedDict"): CallableGlobal(
        "collections.OrderedDict", collections.OrderedDict),
}
#: the globals a pickled numpy array names, shared with torch_pickle
#: (MUSE's alignment matrices are numpy arrays torch.save pickled)
NUMPY_ARRAY_GLOBALS = {key: found for key, found in _ALLOWED.items()
                       if key[0].startswith("numpy")}
#: what a pickled array is until its state is set: its ``array`` then
PickledArray = _Array


class _Unpickler(RestrictedUnpickler):
    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise Refused(f"the global {module}.{name}, which is not a "
                           "numpy array (refused: a .pdparams holds arrays, "
                           "never code)") from None

    def persistent_load(self, pid):
        raise Refused(f"a persistent id {_short(pid)}")


def _plain(value, where: str):
    """The unpickled value with every array built.

    Anything but dicts, tuples, lists, strings, numbers and arrays is
    refused.
    """
    if isinstance(value, _Array):
        if value.array is None:
            raise Refused(f"{where}: an array without its state")
        return value.array
    if isinstance(value, dict):
        return {k: _plain(v, f"{where}[{_short(k)}]") for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v, where) for v in value)
    if value is None or isinstance(value, (str, bytes, int, float, bool)):
        return value
    raise Refused(f"{where}: a {type(value).__name__}")


def read_pdparams(path: str | os.PathLike) -> dict[str, Any]:
    """A ``.pdparams`` file's dict: name -> numpy array (and the
    ``StructuredToParameterName@@`` dict where the file has it).

    Raises:
        PdparamsError: not such a pickle, cut short, or naming anything
            beyond numpy arrays (refused before it can run).
    """
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise PdparamsError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise PdparamsError(f"{path}: expected a .pdparams file, found a "
                            "directory") from None
    # read from the file as it goes: the file's bytes are never all held
    # beside the arrays made of them
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            value = _plain(_Unpickler(BoundedFile(f, size)).load(),
                           "the dict")
        except Refused as e:
            raise PdparamsError(f"{path}: expected a state dict of numpy "
                                f"arrays, found {e}") from None
        except RecursionError:
            raise PdparamsError(
                f"{path}: expected a state dict of numpy arrays, found "
                "containers nested deeper than Python's recursion limit, "
                "or holding themselves") from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError,
                AttributeError, IndexError, KeyError, MemoryError,
                UnicodeDecodeError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise PdparamsError(f"{path}: not a .pdparams pickle, or cut "
                                f"short ({first})") from None
    if not isinstance(value, dict):
        raise PdparamsError(f"{path}: expected a dict of parameters, found "
                            f"a {type(value).__name__}")
    if BIG_PARAM_KEY in value:
        raise PdparamsError(
            f"{path}: {BIG_PARAM_KEY!r}: arrays split over 4 GiB (Paddle's "
            "pickle protocol 2/3) are not read; save with protocol 4")
    return value
