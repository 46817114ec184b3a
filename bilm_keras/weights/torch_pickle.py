"""PyTorch state-dict files read with the standard library and numpy, no
torch.

::

    from bilm_keras.weights.torch_pickle import read_torch_state_dict
    state = read_torch_state_dict("encoder.pkl")   # {name: np.ndarray}

Both formats :func:`torch.save` has written are read:

* **legacy**: torch 0.4 to 1.5, and later torch with
  ``_use_new_zipfile_serialization=False``. ELMoForManyLangs' released
  ``token_embedder.pkl`` and ``encoder.pkl`` are legacy files. Five pickles
  come back to back: torch's magic number, the format version 1001, a dict
  of the writer's type sizes, the object itself and the list of storage
  keys. Each storage in the object is a persistent id
  ``('storage', type, key, location, numel, view)``. Then, for each key in
  that order, come an int64 element count and the storage's raw bytes,
  always little-endian.
* **zip**: torch >= 1.6. ``<folder>/data.pkl`` holds the object, with
  storages as persistent ids ``('storage', type, key, location, numel)``.
  Each storage's bytes are in ``<folder>/data/<key>``. The writer's byte
  order is in ``<folder>/byteorder``, little-endian when absent. The folder
  may have any name.

Every pickle, the small header ones included, goes through one restricted
unpickler. It looks each global up in a table of the names that rebuilding
tensors needs: torch's ``_rebuild_tensor*`` / ``_rebuild_parameter*`` /
``_rebuild_from_type_v2``, the storage types, dtypes and
``collections.OrderedDict``. The table also holds what a numpy array needs:
numpy's own reduce, shared with :mod:`~bilm_keras.weights.paddle_pdparams`,
and ``_codecs.encode``, protocol 2's bytes. MUSE's ``best_mapping.pth`` is
``torch.save`` of a numpy array. Each name is mapped to a function or
marker of this module. Any other global (``os.system``, ``builtins.eval``, a
``torch.nn.Module`` class, ...) is refused with one line naming the file and
the global, before anything can call it. Tensors come back as numpy arrays
of the stored dtype (float16/32/64, int8-64, uint8, bool, complex64/128),
shape and values. Bfloat16, quantized and sparse tensors are refused.
Storage offsets, strides, views and storages shared by several tensors are
honoured. No two arrays share memory: tensors that share a storage come
back as separate arrays, where torch would alias them. One tensor saved
under two names is one array under both, as torch gives one tensor.

A file that is not a torch file, is cut short or does not hold what it
claims raises :class:`TorchPickleError`. Its one line names the file, what
was expected and what was found.
"""

from __future__ import annotations

import collections
import io
import mmap
import os
import pickle
import reprlib
import struct
import zipfile
from typing import Any, BinaryIO, Dict, Optional, Tuple

import numpy as np

from bilm_keras.weights.paddle_pdparams import (
    NUMPY_ARRAY_GLOBALS, PickledArray)
from bilm_keras.weights.restricted_pickle import (
    BoundedFile, CallableGlobal, NamedGlobal, Refused, RestrictedUnpickler)

#: the first pickle of a legacy file (torch.serialization.MAGIC_NUMBER)
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
#: the second one (torch.serialization.PROTOCOL_VERSION)
PROTOCOL_VERSION = 1001

#: storage class name -> numpy dtype of its elements (torch writes storage
#: bytes little-endian in the legacy format; zip files say their order)
STORAGE_DTYPES = {
    "DoubleStorage": "<f8",
    "FloatStorage": "<f4",
    "HalfStorage": "<f2",
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
    "ComplexDoubleStorage": "<c16",
    "ComplexFloatStorage": "<c8",
    # torch >= 2.0 may pickle a byte storage as its untyped base
    "UntypedStorage": "u1",
}
#: torch.<name> dtype globals (``_rebuild_tensor_v3``'s dtype argument)
TORCH_DTYPES = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint8": "u1",
    "bool": "?",
    "complex128": "<c16",
    "complex64": "<c8",
}


#: a value of the file in a message: nested containers cut short (their
#: repr could recurse past Python's limit, or run to megabytes)
_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxstring, _repr.maxother = 3, 60, 60
_short = _repr.repr


class TorchPickleError(ValueError):
    """A file that is not a PyTorch state dict this reader can rebuild, or
    that asks for anything beyond tensors (one line: file, expected,
    found)."""


# ------------------------------------------------ what the pickle may name
class _Marker(NamedGlobal):
    """A global the pickle may name but never call (a storage type, a dtype,
    a tensor class), with the dtype of the elements it names, if any."""

    __slots__ = ("dtype",)

    def __init__(self, qualname: str, dtype: Optional[str] = None):
        super().__init__(qualname)
        self.dtype = None if dtype is None else np.dtype(dtype)


class _Storage:
    """A run of bytes of one root storage.

    ``key`` names the root, whose bytes the legacy format stores after the
    pickle. ``byte_offset`` and ``nbytes`` give the part this storage object
    covers: the whole root, or a legacy storage view.
    """

    __slots__ = ("key", "dtype", "byte_offset", "nbytes")

    def __init__(self, key: str, dtype: np.dtype, byte_offset: int,
                 nbytes: int):
        self.key = key
        self.dtype = dtype
        self.byte_offset = byte_offset
        self.nbytes = nbytes

    def __setstate__(self, state):
        raise Refused("state set on a storage")


class _Tensor:
    """A tensor to build once the storages' bytes are read: a strided view
    of ``storage`` (all counts in elements of ``dtype``)."""

    __slots__ = ("storage", "offset", "size", "stride", "dtype")

    def __init__(self, storage: _Storage, offset: int, size: Tuple[int, ...],
                 stride: Tuple[int, ...], dtype: np.dtype):
        self.storage = storage
        self.offset = offset
        self.size = size
        self.stride = stride
        self.dtype = dtype

    def __setstate__(self, state):
        raise Refused("state set on a tensor")


def _int_tuple(value, what: str) -> Tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for v in value):
        raise Refused(f"a tensor {what} {_short(value)} (expected a tuple of "
                       "integers >= 0)")
    return tuple(value)


def _rebuild_tensor(storage, storage_offset, size, stride,
                    dtype: Optional[_Marker] = None) -> _Tensor:
    """torch._utils._rebuild_tensor: checks that the view stays inside the
    storage, so that building it later cannot read past its bytes."""
    if not isinstance(storage, _Storage):
        raise Refused(f"a tensor over {type(storage).__name__} (expected a "
                       "storage)")
    if not isinstance(storage_offset, int) or storage_offset < 0:
        raise Refused(f"a tensor storage offset {_short(storage_offset)}")
    size = _int_tuple(size, "size")
    stride = _int_tuple(stride, "stride")
    if len(size) != len(stride):
        raise Refused(f"a tensor of size {size} with stride {stride}")
    if dtype is None:
        dtype = storage.dtype
    elif not (isinstance(dtype, _Marker) and dtype.dtype is not None):
        raise Refused(f"a tensor dtype {_short(dtype)}")
    else:
        dtype = dtype.dtype
    if all(size):  # an empty tensor reads nothing
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last + 1) * dtype.itemsize > storage.nbytes:
            raise Refused(
                f"a tensor of size {size}, stride {stride}, offset "
                f"{storage_offset} past the end of its storage of "
                f"{storage.nbytes // dtype.itemsize} elements")
    return _Tensor(storage, storage_offset, size, stride, dtype)


def _check_metadata(metadata) -> None:
    # conj / neg bits: the stored values are not the tensor's values
    if metadata and any(metadata.values()):
        raise Refused(f"a tensor with metadata {_short(metadata)} (conj/neg "
                       "views are not supported)")


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
                       backward_hooks, metadata=None) -> _Tensor:
    _check_metadata(metadata)
    return _rebuild_tensor(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad,
                       backward_hooks, dtype, metadata=None) -> _Tensor:
    _check_metadata(metadata)
    return _rebuild_tensor(storage, storage_offset, size, stride, dtype)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    # a Parameter is its data here (state: plain Python attributes)
    if not isinstance(data, _Tensor):
        raise Refused(f"a Parameter of {type(data).__name__}")
    return data


def _rebuild_from_type_v2(func, new_type, args, state):
    # a tensor (subclass) with Python attributes: rebuilt by ``func``; the
    # attributes are dropped
    if not (isinstance(func, CallableGlobal) and func.function in (
            _rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3,
            _rebuild_parameter)) or not isinstance(new_type, _Marker) or (
            not isinstance(args, tuple)):
        raise Refused(f"_rebuild_from_type_v2 of {func!r}, {new_type!r}")
    return func(*args)


def _latin1_bytes(text, encoding="utf-8") -> bytes:
    """_codecs.encode as pickle protocol 2 uses it: bytes as latin-1 text."""
    if not (isinstance(text, str) and encoding == "latin1"):
        raise Refused(f"_codecs.encode of {type(text).__name__}, "
                       f"{encoding!r} (expected text, 'latin1')")
    return text.encode("latin1")


def _allowed_globals() -> Dict[Tuple[str, str], Any]:
    """(module, name) -> what the pickle gets for it."""
    callables = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        # torch.tensor: its name in torch 1.6-1.8
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch.tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    }
    table: Dict[Tuple[str, str], Any] = {
        key: CallableGlobal(".".join(key), function)
        for key, function in callables.items()}
    table.update({
        ("torch", "Tensor"): _Marker("torch.Tensor"),
        ("torch.nn.parameter", "Parameter"):
            _Marker("torch.nn.parameter.Parameter"),
    })
    for name, dtype in STORAGE_DTYPES.items():
        # torch.cuda.*: a legacy file saved from GPU tensors
        for module in ("torch", "torch.cuda"):
            table[module, name] = _Marker(f"{module}.{name}", dtype)
    for name, dtype in TORCH_DTYPES.items():
        table["torch", name] = _Marker(f"torch.{name}", dtype)
    # a numpy array torch.save pickled (MUSE's best_mapping.pth): numpy's
    # own reduce, its raw bytes as protocol 2 spells bytes
    table.update(NUMPY_ARRAY_GLOBALS)
    table["_codecs", "encode"] = CallableGlobal("_codecs.encode",
                                                _latin1_bytes)
    return table


_ALLOWED = _allowed_globals()


# ------------------------------------------------------------ the unpickler
def _bounded(file: BinaryIO) -> BoundedFile:
    """``file`` as read up to its end (a legacy file or a zip's data.pkl
    read into memory)."""
    position = file.tell()
    end = file.seek(0, os.SEEK_END)
    file.seek(position)
    return BoundedFile(file, end)



class _Unpickler(RestrictedUnpickler):
    """``pickle.Unpickler`` that resolves globals from :data:`_ALLOWED` only
    and turns storage persistent ids into :class:`_Storage` records."""

    def __init__(self, file: BinaryIO, reader: "_Reader",
                 storages: bool):
        super().__init__(file, encoding="utf-8")
        self._reader = reader
        self._storages = storages

    def find_class(self, module, name):
        found = _ALLOWED.get((module, name))
        if found is None:
            raise Refused(f"global '{module}.{name}'")
        return found

    def persistent_load(self, pid):
        if not self._storages:
            raise Refused(f"persistent id {_short(pid)} outside the object")
        return self._reader.storage(pid)


class _Reader:
    """One file's read: the storages its pickle names, then their bytes."""

    def __init__(self, path: str, zip_format: bool):
        self.path = path
        self.zip_format = zip_format
        #: root key -> (dtype, numel) as the pickle declared it
        self.roots: Dict[str, Tuple[np.dtype, int]] = {}
        #: root key -> its bytes, once read
        self.buffers: Dict[str, np.ndarray] = {}

    def fail(self, message: str) -> TorchPickleError:
        # a record's name comes from the file: its line breaks escaped
        message = message.replace("\r", "\\r").replace("\n", "\\n")
        return TorchPickleError(f"{self.path}: {message}")

    # -- persistent ids
    def storage(self, pid) -> _Storage:
        n = 5 if self.zip_format else 6
        if not (isinstance(pid, tuple) and len(pid) == n
                and pid[0] == "storage"):
            if isinstance(pid, tuple) and pid and pid[0] == "module":
                raise Refused("a pickled torch.nn.Module (torch.save(model)"
                               "; save model.state_dict() instead)")
            raise Refused(f"persistent id {_short(pid)} (expected a {n}-tuple "
                           "('storage', ...))")
        storage_type, key, location, numel = pid[1:5]
        if not (isinstance(storage_type, _Marker)
                and storage_type.dtype is not None):
            raise Refused(f"storage type {storage_type!r}")
        if not (isinstance(key, str) and isinstance(location, str)
                and isinstance(numel, int) and numel >= 0):
            raise Refused(f"storage id {_short(pid)}")
        dtype = storage_type.dtype
        if storage_type.qualname.endswith("UntypedStorage"):
            dtype = np.dtype("u1")  # numel counts bytes
        declared = self.roots.setdefault(key, (dtype, numel))
        if declared != (dtype, numel):
            raise Refused(f"storage {key!r} as {dtype} x {numel}, declared "
                           f"before as {declared[0]} x {declared[1]}")
        view = pid[5] if not self.zip_format else None
        if view is None:
            return _Storage(key, dtype, 0, numel * dtype.itemsize)
        # a legacy storage view: (view key, element offset, element count)
        if not (isinstance(view, tuple) and len(view) == 3
                and all(isinstance(v, int) for v in view[1:])
                and 0 <= view[1] and 0 <= view[2]
                and view[1] + view[2] <= numel):
            raise Refused(f"storage view {_short(view)} of {numel} elements")
        return _Storage(key, dtype, view[1] * dtype.itemsize,
                        view[2] * dtype.itemsize)

    # -- pickles
    def unpickle(self, file: BinaryIO, what: str, storages: bool = False):
        try:
            return _Unpickler(_bounded(file), self, storages).load()
        except Refused as e:
            raise self.fail(
                f"refused {e} in {what}: a PyTorch state dict holds tensors "
                "only, and this reader builds nothing else (allowed: torch's "
                "tensor rebuilders, storage types and dtypes, "
                "collections.OrderedDict, a numpy array's rebuild)"
            ) from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError,
                AttributeError, IndexError, KeyError, struct.error,
                OverflowError, MemoryError, RecursionError) as e:
            text = str(e).strip().splitlines()
            found = f"{type(e).__name__}: {text[0]}" if text else (
                type(e).__name__)
            raise self.fail(f"expected {what}, found a damaged or truncated "
                            f"pickle ({found})") from None

    # -- building the arrays
    def materialize(self, obj):
        """``obj`` with every :class:`_Tensor` replaced by its array."""
        users: Dict[str, int] = collections.Counter()
        self._walk(obj, lambda t: users.update([t.storage.key]), {})
        return self._walk(obj, lambda t: self._array(t, users), {})

    def _walk(self, obj, on_tensor, done: Dict[int, Any]):
        if id(obj) in done:  # shared or cyclic containers, tied tensors
            return done[id(obj)]
        if isinstance(obj, _Tensor):
            done[id(obj)] = result = on_tensor(obj)
            return result
        if isinstance(obj, PickledArray):
            if obj.array is None:
                raise self.fail("expected a numpy array, found one "
                                "without its state")
            return obj.array
        if isinstance(obj, (_Storage, NamedGlobal, CallableGlobal)):
            what = ("a storage" if isinstance(obj, _Storage)
                    else f"the global {obj!r}")
            raise self.fail(f"expected tensors, dicts and plain values, "
                            f"found {what} outside a tensor")
        if isinstance(obj, dict):
            result = type(obj)()
            done[id(obj)] = result
            for key, value in obj.items():
                if isinstance(key, (_Tensor, _Storage, _Marker,
                                    CallableGlobal)):
                    raise self.fail("expected dict keys of plain values, "
                                    f"found {_short(key)} as a key")
                result[key] = self._walk(value, on_tensor, done)
            return result
        if isinstance(obj, list):
            result = []
            done[id(obj)] = result
            result.extend(self._walk(v, on_tensor, done) for v in obj)
            return result
        if isinstance(obj, tuple):
            result = tuple(self._walk(v, on_tensor, done) for v in obj)
            done[id(obj)] = result
            return result
        if not isinstance(obj, _PLAIN):  # a numpy dtype left on its own
            raise self.fail(f"expected tensors, arrays, dicts and plain "
                            f"values, found a {type(obj).__name__}")
        return obj

    def _array(self, t: _Tensor, users: Dict[str, int]) -> np.ndarray:
        itemsize = t.dtype.itemsize
        if not all(t.size):
            return np.zeros(t.size, t.dtype.newbyteorder("="))
        buffer = self.buffers[t.storage.key]
        array = np.ndarray(
            t.size, dtype=t.dtype, buffer=buffer,
            offset=t.storage.byte_offset + t.offset * itemsize,
            strides=tuple(s * itemsize for s in t.stride))
        if not t.dtype.isnative:  # a big-endian zip file: same values
            return array.astype(t.dtype.newbyteorder("="))
        # the one tensor of its storage, contiguous and most of it: keep the
        # read buffer; else a copy, so that no two arrays share memory
        if (users[t.storage.key] == 1 and array.flags.c_contiguous
                and 2 * array.nbytes >= buffer.nbytes):
            return array
        return np.array(array, order="C", copy=True)


#: the values a pickle holds besides containers, tensors and arrays
_PLAIN = (str, bytes, bytearray, int, float, complex, type(None), set,
          frozenset)


#: bytes per readinto: bounds the temporary copy a zip member makes
_CHUNK = 1 << 24


def _read_into(file: BinaryIO, nbytes: int) -> Tuple[np.ndarray, int]:
    """``nbytes`` from ``file`` into a new uint8 array, and the count read.

    A large buffer is private anonymous memory from ``mmap``, whose pages
    are mapped as the read fills them. ``np.empty`` would ask for
    transparent huge pages instead. That made reading a released model's
    300 MB 2-4x slower on this project's 2-core machines, see
    bench/RESULTS.md. ``mmap``'s default shared memory was about 1.5x slower.
    """
    if nbytes >= 1 << 20:
        private = getattr(mmap, "MAP_PRIVATE", 0) | getattr(
            mmap, "MAP_ANONYMOUS", 0)
        memory = (mmap.mmap(-1, nbytes, flags=private) if private
                  else mmap.mmap(-1, nbytes))
        buffer = np.frombuffer(memory, np.uint8)
    else:
        buffer = np.empty(nbytes, np.uint8)
    view, got = memoryview(buffer), 0
    while got < nbytes:
        n = file.readinto(view[got:got + _CHUNK])
        if not n:
            break
        got += n
    return buffer, got


# ----------------------------------------------------------------- formats
def _load_legacy(reader: _Reader, f: BinaryIO, size: int):
    magic = reader.unpickle(f, "torch's magic number")
    if magic != MAGIC_NUMBER:
        found = hex(magic) if isinstance(magic, int) else (
            f"a pickled {type(magic).__name__}")
        raise reader.fail(f"expected a PyTorch file starting with torch's "
                          f"magic number {hex(MAGIC_NUMBER)}, found {found}")
    version = reader.unpickle(f, "torch's format version")
    if version != PROTOCOL_VERSION:
        raise reader.fail(f"expected torch's legacy format version "
                          f"{PROTOCOL_VERSION}, found {_short(version)}")
    reader.unpickle(f, "torch's system info")  # type sizes: not needed
    obj = reader.unpickle(f, "the saved object", storages=True)
    keys = reader.unpickle(f, "the list of storage keys")
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)
            and sorted(keys) == sorted(reader.roots)):
        raise reader.fail(f"expected the storage keys "
                          f"{sorted(reader.roots)} after the object, found "
                          f"{_short(keys)}")
    for key in keys:
        dtype, numel = reader.roots[key]
        start = f.tell()
        header = f.read(8)
        nbytes = numel * dtype.itemsize
        if len(header) == 8:
            count, = struct.unpack("<q", header)
            if count != numel:
                raise reader.fail(
                    f"storage {key!r} at byte {start}: expected {numel} "
                    f"elements, found a count of {count}")
            if start + 8 + nbytes <= size:
                reader.buffers[key], _ = _read_into(f, nbytes)
                continue
        raise reader.fail(
            f"storage {key!r} at byte {start}: expected {8 + nbytes} bytes "
            f"(count and {numel} x {dtype}), found {size - start} (the file "
            "is cut short)")
    rest = size - f.tell()
    if rest:
        raise reader.fail(f"expected the file to end after the last "
                          f"storage, found {rest} more bytes")
    return obj


def _load_zip(reader: _Reader, f: BinaryIO):
    try:
        archive = zipfile.ZipFile(f)
        names = archive.namelist()
        size = f.seek(0, os.SEEK_END)
        for info in archive.infolist():
            # torch stores records uncompressed: none holds more than the
            # file, and reading one allocates what its header claims
            claimed = max(info.compress_size, info.file_size)
            if info.header_offset + claimed > size:
                raise reader.fail(f"{info.filename}: expected a record "
                                  f"inside the file's {size} bytes, found "
                                  f"one claiming {claimed} bytes at byte "
                                  f"{info.header_offset}")
        # torch's rule: the first record's folder names the archive
        folder = names[0].split("/", 1)[0] if names else ""
        if f"{folder}/constants.pkl" in names:
            raise reader.fail("expected a state dict saved by torch.save, "
                              "found a TorchScript archive (torch.jit.save)")
        if f"{folder}/data.pkl" not in names:
            raise reader.fail(f"expected a torch zip archive with "
                              f"{folder}/data.pkl, found records "
                              f"{names[:5]}")
        order = b"little"
        if f"{folder}/byteorder" in names:
            order = archive.read(f"{folder}/byteorder")
            if order not in (b"little", b"big"):
                raise reader.fail(f"{folder}/byteorder: expected 'little' "
                                  f"or 'big', found {order[:20]!r}")
        with archive.open(f"{folder}/data.pkl") as data:
            obj = reader.unpickle(io.BytesIO(data.read()),
                                  f"{folder}/data.pkl", storages=True)
        for key, (dtype, numel) in reader.roots.items():
            record = f"{folder}/data/{key}"
            if record not in names:
                raise reader.fail(f"expected record {record} for storage "
                                  f"{key!r}, found no such record")
            nbytes = numel * dtype.itemsize
            found = archive.getinfo(record).file_size
            if found != nbytes:
                raise reader.fail(f"{record}: expected {nbytes} bytes "
                                  f"({numel} x {dtype}), found {found}")
            with archive.open(record) as member:
                reader.buffers[key], _ = _read_into(member, nbytes)
        if order == b"big":  # the arrays are byte-swapped as they are built
            _mark_big_endian(obj)
        return obj
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError,
            NotImplementedError, OSError, UnicodeDecodeError) as e:
        # OSError: a seek before the file's start, where a record's offset
        # points; UnicodeDecodeError: a name flagged UTF-8 that is not
        raise reader.fail(f"expected a torch zip archive (torch >= 1.6), "
                          f"found a damaged or truncated one "
                          f"({type(e).__name__}: {e})") from None


def _mark_big_endian(obj, seen=None) -> None:
    """Every tensor of ``obj`` reads its bytes as big-endian."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, _Tensor):
        obj.dtype = obj.dtype.newbyteorder(">")
    elif isinstance(obj, dict):
        for value in obj.values():
            _mark_big_endian(value, seen)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _mark_big_endian(value, seen)


def load_torch_file(path: str | os.PathLike) -> Any:
    """The object a ``torch.save`` file holds, tensors as numpy arrays.

    Dicts, ``OrderedDict`` too, lists, tuples and plain values come back as
    they were saved. Each tensor comes back as an ``np.ndarray`` of its
    saved dtype and shape, in native byte order. A 0-d tensor gives a 0-d
    array.

    Raises:
        TorchPickleError: not a torch file, a truncated or damaged one, or a
            pickle that names anything but tensors and dicts (refused before
            it can run).
        OSError: the file cannot be opened.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(512)
        f.seek(0)
        if head.startswith(b"PK\x03\x04"):
            reader = _Reader(path, zip_format=True)
            obj = _load_zip(reader, f)
        elif head[:1] == b"\x80":  # a binary pickle's PROTO opcode
            reader = _Reader(path, zip_format=False)
            obj = _load_legacy(reader, f, size)
        elif head[257:262] == b"ustar":
            raise TorchPickleError(
                f"{path}: expected a torch.save file of torch >= 0.4, found "
                "a tar archive (torch < 0.4's format, not supported; load "
                "and save it again with torch)")
        else:
            raise TorchPickleError(
                f"{path}: expected a PyTorch file (a zip archive of torch "
                f">= 1.6, or a pickle starting with b'\\x80' of older "
                f"torch), found {'an empty file' if not head else head[:8]}")
    try:
        return reader.materialize(obj)
    except RecursionError:
        raise TorchPickleError(
            f"{path}: expected dicts of tensors, found containers nested "
            "deeper than Python's recursion limit") from None


def read_torch_state_dict(path: str | os.PathLike) -> Dict[str, np.ndarray]:
    """A ``torch.save``\\ d state dict as ``{name: np.ndarray}``, in the
    file's order.

    A checkpoint ``{"state_dict": {...}, ...}`` gives its ``"state_dict"``.
    Arrays keep the stored dtype, with no cast.

    Raises:
        TorchPickleError: as :func:`load_torch_file`, or a file that holds
            something else than a dict of tensors.
        OSError: the file cannot be opened.
    """
    path = os.fspath(path)
    obj = load_torch_file(path)
    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise TorchPickleError(f"{path}: expected a PyTorch state dict (a "
                               f"dict of tensors), found {type(obj).__name__}")
    state = {}
    for key, value in obj.items():
        if not isinstance(value, np.ndarray):
            raise TorchPickleError(
                f"{path}: key {_short(key)}: expected a tensor, found "
                f"{type(value).__name__}")
        state[key] = value
    return state
