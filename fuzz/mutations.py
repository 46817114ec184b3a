"""Structured mutations: inputs random bytes rarely reach.

Each function takes a valid file's bytes (or nothing) and a
``random.Random`` and returns a hostile variant: pickles with opcodes
swapped, globals aimed at any callable, integers set huge, negative or
zero, deep or recursive nesting; archives with bombs, ``..``, absolute
paths and links; HDF5 files with datasets of the wrong rank, dtype or a
claimed size far beyond the file; vocabularies with UTF-8 errors and NULs;
JSON with the wrong types, NaN and huge numbers; Fluid tensor headers with
huge, negative or zero dims and dtype codes.
"""

from __future__ import annotations

import functools
import io
import json
import pickle
import pickletools
import random
import struct
import tarfile
import zipfile
from typing import List, Optional

from fuzz.harness import ABSOLUTE_CANARY

#: (module, name) a hostile GLOBAL / STACK_GLOBAL names
HOSTILE_GLOBALS = [
    ("fuzz.harness", "tripwire"),
    ("os", "system"),
    ("posix", "system"),
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("builtins", "getattr"),
    ("builtins", "__import__"),
    ("subprocess", "Popen"),
    ("numpy", "load"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch", "FloatStorage"),
    ("copyreg", "_reconstructor"),
    ("functools", "partial"),
]

#: integers that break arithmetic on sizes
EDGE_INTS = [0, -1, 1, 2, 255, 256, 65535, 2 ** 31 - 1, 2 ** 31, 2 ** 32,
             2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 10 ** 7, 10 ** 30]


# ------------------------------------------------------------------ pickles
def _ops(data: bytes) -> Optional[list]:
    try:
        return list(pickletools.genops(data))
    except Exception:  # noqa: BLE001 -- not a pickle: no structure
        return None


def _global_bytes(module: str, name: str, stack: bool) -> bytes:
    if not stack:
        return b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    out = b""
    for text in (module, name):
        raw = text.encode()
        out += b"\x8c" + bytes([len(raw)]) + raw  # SHORT_BINUNICODE
    return out + b"\x93"  # STACK_GLOBAL


def pickle_hostile_global(data: bytes, rng: random.Random) -> bytes:
    """Replaces one GLOBAL / STACK_GLOBAL with a hostile one."""
    ops = _ops(data)
    module, name = rng.choice(HOSTILE_GLOBALS)
    if not ops:
        # a fresh pickle calling it with a string argument
        return (b"\x80\x02" + _global_bytes(module, name, rng.random() < .5)
                + b"\x8c\x04echo\x85R.")
    spots = [(op, pos) for op, arg, pos in ops
             if op.name in ("GLOBAL", "STACK_GLOBAL")]
    if not spots:
        return data
    op, pos = rng.choice(spots)
    if op.name == "GLOBAL":
        end = data.index(b"\n", data.index(b"\n", pos + 1) + 1) + 1
        return data[:pos] + _global_bytes(module, name, False) + data[end:]
    # the two strings STACK_GLOBAL would take are popped first
    return data[:pos] + b"00" + _global_bytes(module, name, False) + data[
        pos + 1:]


def pickle_swap_opcode(data: bytes, rng: random.Random) -> bytes:
    """One opcode byte replaced by another opcode's."""
    ops = _ops(data)
    if not ops:
        return data
    _, _, pos = rng.choice(ops)
    codes = [op.code.encode("latin-1") for op in pickletools.opcodes]
    return data[:pos] + rng.choice(codes) + data[pos + 1:]


def pickle_edge_int(data: bytes, rng: random.Random) -> bytes:
    """One integer argument (a shape, a count, an offset, a dtype code)
    set huge, negative or zero."""
    ops = _ops(data)
    if not ops:
        return data
    ints = [(op, arg, pos) for op, arg, pos in ops
            if op.name in ("BININT", "BININT1", "BININT2", "LONG1", "INT")]
    if not ints:
        return data
    op, _, pos = rng.choice(ints)
    value = rng.choice(EDGE_INTS)
    size = {"BININT": 5, "BININT1": 2, "BININT2": 3}.get(op.name)
    if size is None:  # LONG1 / INT: length from the next op
        nxt = [p for _, _, p in ops if p > pos]
        end = nxt[0] if nxt else len(data)
    else:
        end = pos + size
    return data[:pos] + pickle.dumps(value, 2)[2:-1] + data[end:]


def pickle_deep(rng: random.Random) -> bytes:
    """A pickle nested deeper than any recursion limit, or a list that
    holds itself."""
    depth = rng.choice([1000, 20000, 200000])
    kind = rng.randrange(4)
    if kind == 0:
        body = b"]" * depth + b"a" * (depth - 1)  # nested lists
    elif kind == 1:
        body = b"(" * depth + b")" + b"\x85" * (depth - 1)  # tuples
    elif kind == 2:
        body = b"(" * depth + b"l" * depth  # MARK ... LIST
    else:
        # a list appended to itself, wrapped in a dict
        return b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01]q\x02h\x02asa."
    return b"\x80\x02" + body + b"."


def pickle_mutate(data: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(5)
    if choice == 0:
        return pickle_hostile_global(data, rng)
    if choice == 1:
        return pickle_swap_opcode(data, rng)
    if choice == 2:
        return pickle_edge_int(data, rng)
    if choice == 3:
        return pickle_deep(rng)
    return pickle_hostile_global(pickle_edge_int(data, rng), rng)


# --------------------------------------- pickles inside files that hold them
def _pickle_spans(data: bytes) -> List[tuple]:
    """(start, end) of each pickle of a legacy torch file, back to back."""
    spans, pos = [], 0
    while pos < len(data) and data[pos:pos + 1] == b"\x80" and len(
            spans) < 5:
        try:
            ops = list(pickletools.genops(io.BytesIO(data[pos:])))
        except Exception:  # noqa: BLE001
            break
        end = pos + ops[-1][2] + 1
        spans.append((pos, end))
        pos = end
    return spans


def torch_file_mutate(data: bytes, rng: random.Random) -> bytes:
    """A pickle of a legacy torch file or the data.pkl of a zip one
    mutated; or a storage's count set to an edge value."""
    if data.startswith(b"PK"):
        return zip_member_mutate(data, rng, "data.pkl", pickle_mutate)
    spans = _pickle_spans(data)
    if not spans:
        return data
    if rng.random() < 0.2 and len(spans) == 5:
        end = spans[-1][1]
        count = struct.pack("<q", rng.choice(EDGE_INTS[:13]))
        return data[:end] + count + data[end + 8:]
    start, end = rng.choice(spans)
    return data[:start] + pickle_mutate(data[start:end], rng) + data[end:]


def zip_member_mutate(data: bytes, rng: random.Random, suffix: str,
                      mutate) -> bytes:
    """A zip's member ending in ``suffix`` mutated, the zip rewritten."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = [(i, zf.read(i)) for i in zf.infolist()]
    except Exception:  # noqa: BLE001
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info, body in members:
            if info.filename.endswith(suffix):
                body = mutate(body, rng)
            zf.writestr(info, body)
    return out.getvalue()


# ----------------------------------------------------------------- archives
def _tar(members, mode="w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tf:
        for info, body in members:
            tf.addfile(info, io.BytesIO(body) if body is not None else None)
    return out.getvalue()


def _tar_info(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE,
              link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.linkname = size, kind, link
    return info


def hostile_archive(rng: random.Random) -> bytes:
    """A zip or tar with one hostile member among ordinary ones."""
    ordinary = [("model/options.json", b"{}"), ("model/vocab.txt", b"<S>\n")]
    kind = rng.randrange(10)
    name = rng.choice(["../escaped", "model/../../escaped",
                       ABSOLUTE_CANARY + "/x", "C:\\escaped", "\\escaped",
                       "model/./../escaped", "..", "./../escaped"])
    if kind == 0:  # a zip with a hostile name
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for n, body in ordinary:
                zf.writestr(n, body)
            zf.writestr(name, b"escaped")
        return out.getvalue()
    if kind == 1:  # a zip holding a symlink
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            info = zipfile.ZipInfo("model/link")
            info.create_system = 3
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, ABSOLUTE_CANARY)
            zf.writestr("model/link/x", b"through the link")
        return out.getvalue()
    if kind == 2:  # a zip bomb: 64 MB of zeros in a few KB
        return zip_bomb(rng.choice([1 << 20, 64 << 20]))
    if kind == 3:  # a tar.gz bomb
        return tar_bomb(rng.choice([1 << 20, 64 << 20]))
    members = [(_tar_info(n, len(b)), b) for n, b in ordinary]
    if kind == 4:
        members.append((_tar_info(name, 7), b"escaped"))
    elif kind == 5:  # symlink out, then a file through it
        members += [(_tar_info("model/link", kind=tarfile.SYMTYPE,
                               link=ABSOLUTE_CANARY), None),
                    (_tar_info("model/link/x", 7), b"escaped")]
    elif kind == 6:  # a hard link to a file outside
        members.append((_tar_info("model/hard", kind=tarfile.LNKTYPE,
                                  link="/etc/passwd"), None))
    elif kind == 7:  # a device, a fifo
        members.append((_tar_info("model/dev", kind=rng.choice(
            [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])), None))
    elif kind == 8:  # a symlink that is a relative escape
        members += [(_tar_info("model/up", kind=tarfile.SYMTYPE,
                               link="../.."), None),
                    (_tar_info("model/up/escaped", 7), b"escaped")]
    else:  # a member with a huge declared size
        info = _tar_info("model/huge", 0)
        members.append((info, b""))
        data = _tar(members)
        return data.replace(b"00000000000\x00", b"77777777777\x00", 3)
    return _tar(members, mode=rng.choice(["w", "w:gz"]))


@functools.lru_cache(maxsize=None)
def zip_bomb(size: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("model/bomb.bin", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(size >> 20):
                f.write(chunk)
    return out.getvalue()


@functools.lru_cache(maxsize=None)
def tar_bomb(size: int) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tf:
        info = _tar_info("model/bomb.bin", size)
        tf.addfile(info, io.BytesIO(bytes(size)))
    return out.getvalue()


# -------------------------------------------------------------------- HDF5
def hdf5_mutate(data: bytes, rng: random.Random) -> bytes:
    """The HDF5 file rewritten with one dataset of the wrong rank, dtype or
    a claimed shape far beyond the file, or a link in its place."""
    import h5py
    import numpy as np

    try:
        with h5py.File(io.BytesIO(data), "r") as fin:
            names = []
            fin.visititems(lambda n, o: names.append(n)
                           if isinstance(o, h5py.Dataset) else None)
            # an earlier mutation's dataset may claim gigabytes: reading
            # it here, outside the harness' bound, would take them
            if any(fin[n].size * fin[n].dtype.itemsize > len(data) + (
                    1 << 20) for n in names):
                return data
            values = {n: fin[n][()] for n in names}
    except Exception:  # noqa: BLE001
        return data
    if not names:
        return data
    victim = rng.choice(names)
    out = io.BytesIO()
    with h5py.File(out, "w") as fout:
        for n in names:
            if n != victim:
                fout[n] = values[n]
        shape = values[victim].shape
        kind = rng.randrange(9)
        if kind == 0:  # wrong rank
            fout[victim] = values[victim].reshape(-1) if len(shape) > 1 else (
                values[victim][None, None])
        elif kind == 1:  # wrong dtype
            dtype = rng.choice(["i8", "f2", "f8", "u1", "?", "c8"])
            fout[victim] = values[victim].astype(dtype)
        elif kind == 2:  # strings
            fout[victim] = np.array([b"x"] * max(1, shape[0] if shape else 1))
        elif kind == 3:  # a claimed shape of gigabytes, nothing stored
            big = tuple(rng.choice([10 ** 5, 10 ** 7, 2 ** 31]) for _ in (
                shape or (1,)))
            fout.create_dataset(victim, shape=big, dtype="f4",
                                chunks=tuple(1 for _ in big))
        elif kind == 4:  # a group in its place
            fout.create_group(victim)
        elif kind == 5:  # a soft link to itself
            fout[victim] = h5py.SoftLink("/" + victim)
        elif kind == 6:  # an external link
            fout[victim] = h5py.ExternalLink("/etc/passwd", "/x")
        elif kind == 7:  # a scalar
            fout[victim] = np.float32(rng.choice([0.0, float("nan")]))
        else:  # compound dtype
            fout[victim] = np.zeros(shape or (1,), "f4,f4")
    return out.getvalue()


# -------------------------------------------------------- text, JSON, Fluid
BAD_TEXT = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf",
            b"\r", b"\x85", b"\xe2\x80\xa8", b"!!!MAXTERMID\n", b"\n" * 50,
            b"x" * 5000, b"<S>\n", b"</S>\n", b"<UNK>\n", b"\xf4\x90\x80\x80"]


def text_mutate(data: bytes, rng: random.Random) -> bytes:
    """UTF-8 errors, NULs, BOMs, odd line ends inserted at a line start or
    anywhere."""
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data) + 1)
        if rng.random() < 0.5:
            nl = data.rfind(b"\n", 0, pos)
            pos = nl + 1
        data = data[:pos] + rng.choice(BAD_TEXT) + data[pos:]
    return data


JSON_VALUES = [float("nan"), float("inf"), -float("inf"), 10 ** 7,
               10 ** 30, -1, 0, 1e308, 2 ** 63, "64", "", None, True, [],
               {}, [[1, 4]], [[0, 0]], [[-1, 4]], [[1, 10 ** 9]], 0.5,
               "relu\u0000", {"dim": 10 ** 7}]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths(sub, prefix + (key,))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _paths(sub, prefix + (i,))


def json_mutate(data: bytes, rng: random.Random) -> bytes:
    """One field set to a wrong type, NaN, a huge number, or removed."""
    try:
        value = json.loads(data)
    except Exception:  # noqa: BLE001
        return data
    paths = [p for p in _paths(value) if p]
    if not paths:
        return json.dumps(rng.choice(JSON_VALUES)).encode()
    for _ in range(rng.randint(1, 2)):
        path = rng.choice(paths)
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        if rng.random() < 0.15 and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            try:
                parent[path[-1]] = rng.choice(JSON_VALUES)
            except (IndexError, KeyError, TypeError):
                pass
        paths = [p for p in _paths(value) if p] or [()]
    return json.dumps(value).encode()


def fluid_mutate(data: bytes, rng: random.Random) -> bytes:
    """A Fluid tensor's header with a field set to an edge value: the
    versions, the LoD level, the desc's size, its dtype code or a dim."""
    if len(data) < 24:
        return data
    kind = rng.randrange(5)
    if kind == 0:  # a version or the lod level
        spot = rng.choice([0, 4, 12])
        width = 8 if spot == 4 else 4
        value = rng.choice(EDGE_INTS) % (1 << (8 * width))
        return data[:spot] + value.to_bytes(width, "little") + data[
            spot + width:]
    # the tensor desc: after version (4), lod level (8), version (4)
    start = 16
    desc_size = struct.unpack_from("<i", data, start)[0]
    desc = data[start + 4:start + 4 + max(desc_size, 0)]
    if kind == 1:
        size = rng.choice([-1, 0, 2 ** 31 - 1, len(data) + 1000])
        return data[:start] + struct.pack("<i", size) + data[start + 4:]
    new = bytearray()
    pos = 0
    while pos < len(desc):  # field 1: dtype varint, field 2: dims
        tag = desc[pos]
        pos += 1
        value, shift = 0, 0
        while pos < len(desc):
            b = desc[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if (kind == 2 and tag == 0x08) or (kind >= 3 and tag == 0x10
                                           and rng.random() < 0.5):
            value = rng.choice(EDGE_INTS) % (1 << 64)
        new.append(tag)
        new += _varint(value)
    body = bytes(new)
    return (data[:start] + struct.pack("<i", len(body)) + body
            + data[start + 4 + max(desc_size, 0):])


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# ------------------------------------------------ TF1 Hub module graphs
#: the graph nodes whose values a TF1 Hub module reader takes options from
GRAPH_NODE_HINTS = ("clip_by_value", "CNN/MaxPool", "CNN/Relu", "CNN/Tanh",
                    "MultiRNNCell/Cell1/", "MultiRNNCell/Cell0/")
#: float values that break a clip or a window
EDGE_FLOATS = [0.0, -0.0, -1.0, 1e-45, 3.4e38, float("nan"), float("inf"),
               -float("inf")]


def _saved_model(data: bytes):
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError):
        return None
    return proto if proto.meta_graphs else None


def saved_model_prune(data: bytes) -> bytes:
    """``data``'s first graph reduced to the nodes an options reader looks
    at (clips, the pool, the activation, the second cell's adds) and their
    direct inputs: kilobytes instead of a megabyte, so libFuzzer's own
    mutations reach them."""
    proto = _saved_model(data)
    if proto is None:
        return data
    meta = proto.meta_graphs[0]
    nodes = list(meta.graph_def.node)
    cell0 = "bilm/RNN_0/RNN/MultiRNNCell/Cell0/"
    cell1 = "bilm/RNN_0/RNN/MultiRNNCell/Cell1/"
    keep = {n.name for n in nodes if n.name in (
        "bilm/CNN/MaxPool", "bilm/CNN/Relu", "bilm/CNN/Tanh") or (
        n.name.startswith(cell0) and n.op == "Minimum") or (
        n.name.startswith(cell1) and n.op in ("Add", "AddV2"))}
    inputs = {i.lstrip("^").split(":")[0] for n in nodes if n.name in keep
              for i in n.input}
    kept = [n for n in nodes if n.name in keep or n.name in inputs]
    for n in kept:  # what the reader reads: names, ops, inputs, values
        if n.name in inputs and n.name not in keep:
            del n.input[:]
        for key in [k for k in n.attr if k not in ("value", "ksize")]:
            del n.attr[key]
    del meta.graph_def.node[:]
    meta.graph_def.node.extend(kept)
    meta.ClearField("collection_def")
    meta.ClearField("signature_def")
    meta.ClearField("meta_info_def")
    del proto.meta_graphs[1:]
    return proto.SerializeToString()


def saved_model_mutate(data: bytes, rng: random.Random) -> bytes:
    """One of the nodes a reader takes options from changed: a Const's
    value set to an edge float or to bytes of the wrong length, an op's
    inputs dropped, renamed or pointed elsewhere, a pool window set to
    edge integers, or the node removed."""
    proto = _saved_model(data)
    if proto is None:
        return data
    nodes = proto.meta_graphs[0].graph_def.node
    picks = [i for i, n in enumerate(nodes)
             if any(h in n.name for h in GRAPH_NODE_HINTS)
             or n.op == "Const"]
    if not picks:
        return data
    node = nodes[rng.choice(picks)]
    choice = rng.randrange(7)
    if choice == 0 and node.op == "Const":
        tensor = node.attr["value"].tensor
        tensor.ClearField("float_val")
        tensor.tensor_content = bytes(rng.randrange(256)
                                      for _ in range(rng.choice([0, 1, 3])))
    elif choice == 1 and node.op == "Const":
        tensor = node.attr["value"].tensor
        tensor.ClearField("tensor_content")
        del tensor.float_val[:]
        tensor.float_val.append(rng.choice(EDGE_FLOATS))
    elif choice == 2:
        del node.input[rng.randrange(len(node.input) + 1):]
    elif choice == 3 and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(
            ["", "^", ":", "missing", nodes[rng.randrange(len(nodes))].name])
    elif choice == 4:
        ksize = node.attr["ksize"].list.i
        del ksize[:]
        ksize.extend(rng.choice(EDGE_INTS[:12]) for _ in range(
            rng.choice([0, 3, 4, 4, 5])))
    elif choice == 5:
        node.op = rng.choice(["Const", "Minimum", "Add", "AddV2", "MatMul",
                              "Relu", "Tanh", "MaxPool", ""])
    else:
        del nodes[rng.randrange(len(nodes))]
    return proto.SerializeToString()
