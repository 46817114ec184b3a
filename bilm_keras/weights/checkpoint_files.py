"""A TensorFlow checkpoint's files, and whether they read whole.

A checkpoint ``PREFIX`` is ``PREFIX.index`` and its data shards
``PREFIX.data-0000K-of-0000N`` (``tf.train.Saver`` in bilm-tf's TF1 runs
and ``tf.train.Checkpoint`` in ours write the same "tensor bundle"). The
index is a LevelDB-format table: the key ``""`` holds a
``BundleHeaderProto`` (the number of shards), every other key a tensor's
``BundleEntryProto`` with its shard, ``offset`` and ``size`` in bytes.
TensorFlow writes each shard's tensors one after another, so a shard is
exactly as long as its last tensor's ``offset + size``.

:func:`checkpoint_damage` checks that cheaply and exactly. It reads the
index, a few kilobytes, and stats the shards. Reading every tensor with
``tf.train.load_checkpoint`` + ``get_tensor`` would be a pass over the
published model's 1.6 GB softmax and its as large Adagrad slots. A shard
cut short, by a kill during a write on a network file system or a full
disk, is shorter than its index says. A cut-short index has no table
footer.

:func:`list_checkpoints` lists a save_dir's checkpoints newest first, both
bilm-tf's ``model.ckpt-N`` and our ``model-N``. It includes those its
``checkpoint`` state file names but whose files are gone.
:func:`resolve_checkpoint` finds the one a user names. DeepPavlov's ELMo
keeps its checkpoint ``saves/model`` in a folder :data:`DEEPPAVLOV_SAVES`
beside ``options.json``: :func:`checkpoint_dir` finds it there. Neither imports
TensorFlow, and neither does reading an index: its two protocol buffers,
``BundleHeaderProto`` and ``BundleEntryProto``, are read field by field
here, so the command line tells a checkpoint's writer before it loads.
"""

from __future__ import annotations

import codecs
import dataclasses
import glob
import os
import re
import struct
from typing import Dict, List, Optional, Tuple

from bilm_keras._utils.problem_list import name_list
from bilm_keras._utils.settings import SettingError

#: the last 8 bytes of a LevelDB table (``kTableMagicNumber``)
_TABLE_MAGIC = 0xDB4775248B80FB57
#: the footer: two block handles padded to 40 bytes, then the magic
_FOOTER_BYTES = 48
#: a block's trailer: compression type (1 byte) and a CRC (4 bytes)
_BLOCK_TRAILER_BYTES = 5
_DATA_SHARD = re.compile(r"\.data-(\d{5})-of-(\d{5})$")
_STEP = re.compile(r"-(\d+)$")
#: the folder of DeepPavlov's ELMo checkpoint, beside its ``options.json``
DEEPPAVLOV_SAVES = "saves"


class CheckpointIndexError(ValueError):
    """An index file that is not a whole tensor-bundle table."""


@dataclasses.dataclass(frozen=True)
class TensorExtent:
    """Where a tensor's bytes are: ``size`` bytes at ``offset`` of data
    shard ``shard``, and its ``shape`` (``()`` for a scalar)."""

    shard: int
    offset: int
    size: int
    shape: Tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class CheckpointIndex:
    """What a checkpoint's ``.index`` says about its data.

    Attributes:
        num_shards: the ``.data-*-of-N`` files.
        extents: ``{tensor key: TensorExtent}`` (a sliced tensor's slices
            are keys of their own).
    """

    num_shards: int
    extents: Dict[str, TensorExtent]

    def shard_path(self, prefix: str, shard: int) -> str:
        return f"{prefix}.data-{shard:05d}-of-{self.num_shards:05d}"

    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """``{tensor key: shape}``, what ``tf.train.list_variables``
        lists."""
        return {key: extent.shape for key, extent in self.extents.items()}

    def shard_sizes(self) -> List[int]:
        """The bytes each data shard must hold."""
        sizes = [0] * self.num_shards
        for extent in self.extents.values():
            end = extent.offset + extent.size
            if 0 <= extent.shard < self.num_shards:
                sizes[extent.shard] = max(sizes[extent.shard], end)
        return sizes


def _varint(data: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise CheckpointIndexError("a varint runs past its block")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


#: protocol buffer wire types: a varint, 8 bytes, a length, 4 bytes
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def _proto_fields(message: bytes) -> List[Tuple[int, object]]:
    """``(field number, value)`` of each field of a protocol buffer: an
    int for a varint, bytes for the rest. Enough for the two messages of
    a bundle's index; groups, which they never hold, are refused."""
    fields, pos = [], 0
    while pos < len(message):
        tag, pos = _varint(message, pos)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            value, pos = _varint(message, pos)
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            value, pos = message[pos:pos + width], pos + width
        elif wire == _LENGTH:
            length, pos = _varint(message, pos)
            value, pos = message[pos:pos + length], pos + length
        else:
            raise CheckpointIndexError(f"wire type {wire} of field {number}")
        if pos > len(message):
            raise CheckpointIndexError(f"field {number} runs past its entry")
        fields.append((number, value))
    return fields


def _signed(value: int) -> int:
    """A varint read as the two's complement int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


#: ``BundleEntryProto``'s fields: ``shape`` (a ``TensorShapeProto``),
#: ``shard_id``, ``offset``, ``size``; ``TensorShapeProto.dim`` and
#: ``Dim.size``; ``BundleHeaderProto.num_shards``
_ENTRY_SHAPE, _ENTRY_SHARD, _ENTRY_OFFSET, _ENTRY_SIZE = 2, 3, 4, 5
_SHAPE_DIM, _DIM_SIZE = 2, 1
_HEADER_NUM_SHARDS = 1


def _entry(value: bytes) -> TensorExtent:
    """A ``BundleEntryProto`` as a :class:`TensorExtent`."""
    found = {_ENTRY_SHARD: 0, _ENTRY_OFFSET: 0, _ENTRY_SIZE: 0}
    shape = ()
    for number, field in _proto_fields(value):
        if number == _ENTRY_SHAPE:
            shape = tuple(
                _signed(dict(_proto_fields(dim)).get(_DIM_SIZE, 0))
                for n, dim in _proto_fields(field) if n == _SHAPE_DIM)
        elif number in found:
            found[number] = _signed(field)
    return TensorExtent(found[_ENTRY_SHARD], found[_ENTRY_OFFSET],
                        found[_ENTRY_SIZE], shape)


def _block(data: bytes, handle: bytes, pos: int = 0) -> bytes:
    """The contents of the block a handle (offset, size varints) names."""
    offset, pos = _varint(handle, pos)
    size, _ = _varint(handle, pos)
    end = offset + size + _BLOCK_TRAILER_BYTES
    if end > len(data):
        raise CheckpointIndexError(
            f"a block ends at byte {end}, past the file's {len(data)}")
    if data[offset + size] != 0:  # TensorFlow's bundles are uncompressed
        raise CheckpointIndexError(
            f"a block has compression type {data[offset + size]}, "
            "expected 0 (none)")
    return data[offset:offset + size]


def _block_entries(block: bytes):
    """``(key, value)`` of each entry of a table block, in order."""
    if len(block) < 4:
        raise CheckpointIndexError("a block too short for its restarts")
    (n_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 - 4 * n_restarts
    if limit < 0:
        raise CheckpointIndexError("a block's restart array runs past it")
    pos, key = 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        value_length, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + value_length > limit:
            raise CheckpointIndexError("an entry runs past its block")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + value_length]
        pos += value_length


def read_checkpoint_index(prefix: str | os.PathLike) -> CheckpointIndex:
    """Parses ``PREFIX.index``.

    Raises:
        FileNotFoundError: no ``.index``.
        CheckpointIndexError: it is not a whole table. It is cut short,
            with no footer, or an entry does not parse.
    """
    with open(f"{os.fspath(prefix)}.index", "rb") as f:
        data = f.read()
    if len(data) < _FOOTER_BYTES or struct.unpack_from(
            "<Q", data, len(data) - 8)[0] != _TABLE_MAGIC:
        raise CheckpointIndexError(
            f"no table footer in its {len(data)} bytes (cut short?)")
    footer = data[len(data) - _FOOTER_BYTES:]
    _, pos = _varint(footer, 0)  # the metaindex handle: unused
    _, pos = _varint(footer, pos)
    index_block = _block(data, footer, pos)
    num_shards, extents = None, {}
    for _, handle in _block_entries(index_block):
        for key, value in _block_entries(_block(data, handle)):
            try:
                if key == b"":
                    num_shards = dict(_proto_fields(value)).get(
                        _HEADER_NUM_SHARDS, 0)
                    continue
                extent = _entry(value)
            except CheckpointIndexError as e:
                raise CheckpointIndexError(
                    f"entry {key!r} does not parse ({e})") from None
            extents[key.decode("utf-8", "replace")] = extent
    if num_shards is None:
        raise CheckpointIndexError("no header entry")
    return CheckpointIndex(num_shards, extents)


def checkpoint_damage(prefix: str | os.PathLike) -> Optional[str]:
    """None when checkpoint ``prefix`` reads whole, else what is wrong,
    as a short phrase naming the file (``model-217.data-00000-of-00001:
    cut short (12288 of 40960 bytes)``).

    Whole means: the ``.index`` parses to its end and every data shard it
    names is there with at least the bytes its tensors occupy. The
    tensors' CRCs are not read: that is the pass over every byte this
    check avoids. TensorFlow checks them when it reads a tensor.
    """
    prefix = os.fspath(prefix)
    name = os.path.basename(prefix)
    if not os.path.exists(prefix + ".index"):
        return f"{name}.index: missing"
    try:
        index = read_checkpoint_index(prefix)
    except (OSError, CheckpointIndexError) as e:
        return f"{name}.index: unreadable ({e})"
    for shard, needed in enumerate(index.shard_sizes()):
        path = index.shard_path(prefix, shard)
        try:
            size = os.path.getsize(path)
        except OSError:
            return (f"{os.path.basename(path)}: missing (the checkpoint's "
                    f"values; {name}.index is there without them)")
        if size < needed:
            return (f"{os.path.basename(path)}: cut short ({size} of "
                    f"{needed} bytes)")
    return None


def checkpoint_step(prefix: str) -> int:
    """The number a checkpoint's name ends with, -1 for none.

    ``model.ckpt-40`` gives 40.
    """
    m = _STEP.search(os.path.basename(prefix))
    return int(m.group(1)) if m else -1


#: a line of a ``checkpoint`` state file (a text-format
#: ``CheckpointState``): ``model_checkpoint_path: "PATH"``
_STATE_LINE = re.compile(
    r'^\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*'
    r'"((?:[^"\\]|\\.)*)"\s*$')


def _state_file_paths(save_dir: str, state_file: str) -> List[str]:
    """The checkpoints a ``checkpoint`` state file names, the latest first.

    When the path it gives is not there, each is the file of that name in
    ``save_dir``. That is a save_dir copied from another machine, as
    bilm-tf wrote absolute paths. A state file that does not parse names
    none.
    """
    try:
        with open(os.path.join(save_dir, state_file), "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    latest, others = [], []
    for line in text.splitlines():
        m = _STATE_LINE.match(line)
        if m:
            # C escapes, non-ASCII bytes as octal (text format)
            path = codecs.escape_decode(m.group(2).encode("utf-8"))[0]
            (latest if m.group(1) == "model_checkpoint_path"
             else others).append(path.decode("utf-8", "replace"))
    paths = []
    for path in latest + others:
        if not path or "\0" in path:  # no file system holds a NUL
            continue
        if not os.path.isabs(path):
            path = os.path.join(save_dir, path)
        if not _has_files(path):
            path = os.path.join(save_dir, os.path.basename(path))
        paths.append(os.path.normpath(path))
    return paths


def _has_files(prefix: str) -> bool:
    return (os.path.exists(prefix + ".index")
            or bool(glob.glob(glob.escape(prefix) + ".data-*")))


def _holds_checkpoint(folder: str, state_file: str) -> bool:
    pattern = os.path.join(glob.escape(folder), "*")
    return (os.path.isfile(os.path.join(folder, state_file))
            or bool(glob.glob(pattern + ".index"))
            or bool(glob.glob(pattern + ".data-*")))


def checkpoint_dir(save_dir: str | os.PathLike,
                   state_file: str = "checkpoint") -> str:
    """The folder of ``save_dir``'s checkpoints: ``save_dir`` itself, or
    its :data:`DEEPPAVLOV_SAVES` folder when only that holds one
    (DeepPavlov's ELMo saves ``saves/model`` beside ``options.json``).

    Example:
        >>> checkpoint_dir("/nonexistent/run")
        '/nonexistent/run'
    """
    save_dir = os.path.normpath(os.fspath(save_dir))
    saves = os.path.join(save_dir, DEEPPAVLOV_SAVES)
    if (not _holds_checkpoint(save_dir, state_file)
            and os.path.isdir(saves) and _holds_checkpoint(saves, state_file)):
        return saves
    return save_dir


def list_checkpoints(save_dir: str | os.PathLike,
                     state_file: str = "checkpoint") -> List[str]:
    """Every checkpoint prefix of ``save_dir``, newest first.

    A checkpoint is there if its ``.index`` or a data shard is, or if the
    ``state_file`` names it, even if its files are all gone. Newest is the
    highest number at the end of the name, the global step in bilm-tf's
    ``model.ckpt-N`` and our ``model-N`` alike. Among equal numbers, the
    one the state file names as the latest comes first. A save_dir in
    DeepPavlov's layout lists those of its ``saves/``, see
    :func:`checkpoint_dir`.
    """
    save_dir = checkpoint_dir(save_dir, state_file)
    found = set()
    for path in glob.glob(os.path.join(glob.escape(save_dir), "*.index")):
        found.add(path[: -len(".index")])
    for path in glob.glob(os.path.join(glob.escape(save_dir), "*.data-*")):
        m = _DATA_SHARD.search(path)
        if m:
            found.add(path[: m.start()])
    named = _state_file_paths(save_dir, state_file)
    found.update(named)
    latest = named[0] if named else None
    return sorted(found, key=lambda p: (checkpoint_step(p), p == latest, p),
                  reverse=True)


def resolve_checkpoint(save_dir: str | os.PathLike, name: str) -> str:
    """The prefix of the checkpoint of ``save_dir`` a user named:
    ``model-200``, ``model.ckpt-40``, a path, or one of its files
    (``model-200.index``).

    Raises:
        SettingError: field ``checkpoint``, no checkpoint of that name.
            The message lists the save_dir's.
    """
    save_dir = checkpoint_dir(save_dir)
    name = os.fspath(name)
    base = re.sub(r"\.(index|data-\d{5}-of-\d{5}|meta)$", "", name)
    for prefix in (os.path.join(save_dir, base), base):
        if _has_files(prefix):
            return os.path.normpath(prefix)
    known = [os.path.basename(p) for p in list_checkpoints(save_dir)]
    raise SettingError(
        "checkpoint",
        f"expected a checkpoint of {save_dir} "
        f"({name_list(known, empty='it has none')}), found {name!r}")
