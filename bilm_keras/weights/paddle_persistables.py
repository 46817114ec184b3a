"""Paddle Fluid ``save_persistables`` directories, read in plain numpy.

``fluid.io.save_persistables(exe, dirname)`` (Paddle 1.x) writes one file
per variable, named after it (``embedding_para``, ``lstmp_0.w_0``,
``softmax_bias_moment_0``, ...), each a serialized ``LoDTensor``
(Paddle's ``SerializeToStream`` in ``lod_tensor.cc`` and
``tensor_util.cc``)::

    u32  version, 0
    u64  lod_level, then per level: u64 byte size, that many bytes of
         u64 offsets
    u32  tensor version, 0
    i32  byte size of a VarType.TensorDesc (proto2: field 1 the data type,
         a varint; field 2 the dims, one varint each, or packed)
    raw little-endian data, prod(dims) elements

All integers little-endian. Nothing here imports Paddle or TensorFlow: a
checkpoint is read wherever numpy runs. Every malformed file is a
:class:`~bilm_keras.weights.paddle_model.PaddleFormatError` naming the
file, the field, the expected and the found value.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from typing import Dict, Iterable, List, Tuple

import numpy as np

from bilm_keras.weights.paddle_model import PaddleFormatError

#: ``VarType.Type`` codes (framework.proto) of the tensors we can read
DATA_TYPES = {
    0: ("BOOL", np.dtype("?")),
    1: ("INT16", np.dtype("<i2")),
    2: ("INT32", np.dtype("<i4")),
    3: ("INT64", np.dtype("<i8")),
    4: ("FP16", np.dtype("<f2")),
    5: ("FP32", np.dtype("<f4")),
    6: ("FP64", np.dtype("<f8")),
    20: ("UINT8", np.dtype("u1")),
    21: ("INT8", np.dtype("i1")),
}
#: a TensorDesc is a few bytes; anything larger is not one
_MAX_DESC_BYTES = 1 << 12
_MAX_LOD_LEVELS = 8


@dataclasses.dataclass(frozen=True)
class TensorHeader:
    """What a variable file says of its tensor, read without its data.

    Attributes:
        path: the file.
        dtype: numpy dtype of the data (little-endian).
        type_name: Paddle's name of it (``"FP32"``).
        shape: the dims.
        lod: per LoD level, the offsets (empty for a parameter).
        data_offset: where the data starts in the file.
    """

    path: str
    dtype: np.dtype
    type_name: str
    shape: Tuple[int, ...]
    lod: Tuple[Tuple[int, ...], ...]
    data_offset: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def _varint(buf: bytes, pos: int, path: str) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise PaddleFormatError(
                f"{path}: TensorDesc: expected a complete varint, found "
                f"{'a cut-short one' if pos >= len(buf) else 'over 64 bits'}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _parse_tensor_desc(buf: bytes, path: str) -> Tuple[int, List[int]]:
    """(data type code, dims) of a serialized ``VarType.TensorDesc``."""
    data_type, dims, pos = None, [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos, path)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            data_type, pos = _varint(buf, pos, path)
        elif field == 2 and wire == 0:
            dim, pos = _varint(buf, pos, path)
            dims.append(dim)
        elif field == 2 and wire == 2:  # packed dims
            n, pos = _varint(buf, pos, path)
            end = pos + n
            while pos < end:
                dim, pos = _varint(buf, pos, path)
                dims.append(dim)
        else:
            raise PaddleFormatError(
                f"{path}: TensorDesc: expected fields 1 (data type) and 2 "
                f"(dims), found field {field} (wire type {wire})")
    if data_type is None:
        raise PaddleFormatError(
            f"{path}: TensorDesc: expected a data type (field 1), found none")
    for dim in dims:
        if dim >= 1 << 63:  # a negative int64: -1 is "unknown"
            raise PaddleFormatError(
                f"{path}: dims: expected sizes >= 0, found {dim - (1 << 64)}")
    return data_type, dims


class _Reader:
    def __init__(self, f, path: str):
        self.f, self.path = f, path

    def take(self, n: int, what: str) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise PaddleFormatError(
                f"{self.path}: {what}: expected {n} bytes, found "
                f"{len(data)} (file cut short)")
        return data

    def uint(self, fmt: str, what: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def version_zero(self, what: str, expected: str = "0") -> None:
        """A uint32 format version, which Fluid writes as 0 (``expected``:
        how the error names that)."""
        version = self.uint("<I", what)
        if version != 0:
            raise PaddleFormatError(f"{self.path}: {what}: expected "
                                    f"{expected}, found {version}")


def read_header(path: str | os.PathLike) -> TensorHeader:
    """The header of one variable file, checked (the data is not read, but
    its length is checked against the file's size).

    Raises:
        PaddleFormatError: a version other than 0, a cut-short file, an
            unknown data type, a negative dim, bytes beyond the data.
    """
    path = os.fspath(path)
    try:
        file_size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        raise PaddleFormatError(
            f"{path}: expected a Paddle variable file, found "
            f"{e.strerror or e}") from None
    with f:
        r = _Reader(f, path)
        r.version_zero("version", "0 (a Fluid LoDTensor)")
        lod_level = r.uint("<Q", "lod_level")
        if lod_level > _MAX_LOD_LEVELS:
            raise PaddleFormatError(
                f"{path}: lod_level: expected at most {_MAX_LOD_LEVELS}, "
                f"found {lod_level}")
        lod = []
        for level in range(lod_level):
            n_bytes = r.uint("<Q", f"lod level {level} size")
            if n_bytes % 8 or n_bytes > file_size:
                raise PaddleFormatError(
                    f"{path}: lod level {level} size: expected a multiple "
                    f"of 8 within the file, found {n_bytes}")
            raw = r.take(n_bytes, f"lod level {level}")
            lod.append(tuple(int(x) for x in np.frombuffer(raw, "<u8")))
        r.version_zero("tensor version")
        desc_size = r.uint("<i", "TensorDesc size")
        if not 0 < desc_size <= _MAX_DESC_BYTES:
            raise PaddleFormatError(
                f"{path}: TensorDesc size: expected 1 to {_MAX_DESC_BYTES} "
                f"bytes, found {desc_size}")
        data_type, dims = _parse_tensor_desc(
            r.take(desc_size, "TensorDesc"), path)
        data_offset = f.tell()
    if data_type not in DATA_TYPES:
        known = ", ".join(f"{name} ({code})"
                          for code, (name, _) in DATA_TYPES.items())
        raise PaddleFormatError(
            f"{path}: data type: expected one of {known}, found code "
            f"{data_type}")
    type_name, dtype = DATA_TYPES[data_type]
    header = TensorHeader(path, dtype, type_name, tuple(dims), tuple(lod),
                          data_offset)
    expected = data_offset + header.size * dtype.itemsize
    if file_size != expected:
        shape = "x".join(map(str, dims)) or "scalar"
        raise PaddleFormatError(
            f"{path}: data: expected {expected - data_offset} bytes "
            f"({type_name} {shape}), found {file_size - data_offset}"
            + (" (file cut short)" if file_size < expected
               else " (bytes after the data)"))
    return header


def read_variable(path: str | os.PathLike) -> np.ndarray:
    """One variable file as a numpy array of its dtype and shape.

    Args:
        path: the file.

    Raises:
        PaddleFormatError: see :func:`read_header`; a LoD, which a
            parameter never has.
    """
    return read_data(read_header(path))


def read_data(header: TensorHeader) -> np.ndarray:
    """The data a checked header describes."""
    if header.lod:
        raise PaddleFormatError(
            f"{header.path}: lod_level: expected 0 (a parameter has no "
            f"LoD), found {len(header.lod)}")
    with open(header.path, "rb") as f:
        f.seek(header.data_offset)
        data = np.fromfile(f, dtype=header.dtype, count=header.size)
    if data.size != header.size:  # the file changed since its header
        raise PaddleFormatError(
            f"{header.path}: data: expected {header.size} values, found "
            f"{data.size} (file cut short)")
    return data.reshape(header.shape)


def list_variables(dirname: str | os.PathLike) -> List[str]:
    """The variable names of a persistables directory: its plain files,
    sorted (Fluid writes no other files there)."""
    dirname = os.fspath(dirname)
    try:
        names = os.listdir(dirname)
    except OSError as e:
        raise PaddleFormatError(
            f"{dirname}: expected a Paddle persistables directory, found "
            f"{e.strerror or e}") from None
    return sorted(n for n in names if not n.startswith(".")
                  and os.path.isfile(os.path.join(dirname, n)))


def read_headers(dirname: str | os.PathLike, names: Iterable[str]
                 ) -> Dict[str, TensorHeader]:
    """The checked headers of ``names`` in ``dirname`` (missing files named
    in the error)."""
    dirname = os.fspath(dirname)
    return {name: read_header(os.path.join(dirname, name))
            for name in names}
