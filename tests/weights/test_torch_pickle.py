"""torch_pickle reads torch.save files without torch: bit for bit what
``torch.load(weights_only=True)`` gives (files torch writes today in both
formats, the fixture's legacy .pkl files, and files written here by hand
that torch reads too), and it refuses, in one line naming the file, every
pickle that would build anything but tensors and dicts, without running it.

The hand-written files (``_legacy_file``, ``_zip_file``: a small writer of
torch's two formats on ``pickle._Pickler``) let the refusal, truncation and
storage-view tests run without torch; where torch is installed they are also
checked against ``torch.load``.
"""

import collections
import io
import os
import pickle
import struct
import tarfile
import zipfile

import numpy as np
import pytest
from helpers import require_extra

from bilm_keras.weights.torch_pickle import (
    MAGIC_NUMBER,
    PROTOCOL_VERSION,
    TorchPickleError,
    load_torch_file,
    read_torch_state_dict,
)


@pytest.fixture(scope="module")
def torch():
    # comparing with torch.load needs the torch extra
    return require_extra("torch", "torch")


@pytest.fixture(scope="module")
def tiny_model(manylangs_fixtures):
    return manylangs_fixtures / "tiny.model"


def _assert_same(ours, theirs, torch, where="value"):
    """``ours`` (from load_torch_file) equals ``theirs`` (from torch.load):
    the same containers, keys in the same order, arrays of the same dtype,
    shape and bytes."""
    if isinstance(theirs, torch.Tensor):
        expected = theirs.detach().contiguous().numpy()
        assert isinstance(ours, np.ndarray), where
        assert (ours.dtype, ours.shape) == (expected.dtype, expected.shape), (
            where)
        assert ours.tobytes() == expected.tobytes(), where
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for key in theirs:
            _assert_same(ours[key], theirs[key], torch, f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _assert_same(a, b, torch, f"{where}[{i}]")
    else:
        assert ours == theirs, where


# ---------------------------------------------- the fixture's released files
@pytest.mark.parametrize("name", ["token_embedder.pkl", "encoder.pkl"])
def test_fixture_pkl_reads_as_torch_load(tiny_model, torch, name):
    path = tiny_model / name
    ours = read_torch_state_dict(path)
    theirs = torch.load(path, map_location="cpu", weights_only=True)
    assert len(ours) == 16
    _assert_same(ours, dict(theirs), torch)
    assert {a.dtype for a in ours.values()} == {np.dtype("float32")}


def test_fixture_pkl_without_torch_matches_its_config(tiny_model):
    """No torch needed: every key of upstream's encoder, shaped by the
    fixture config (P=16, C=64, 2 layers), each array its own memory."""
    state = read_torch_state_dict(tiny_model / "encoder.pkl")
    expected = {}
    for layer in range(2):
        for d in ("forward", "backward"):
            k = f"{d}_layer_{layer}"
            expected[f"{k}.input_linearity.weight"] = (256, 16)
            expected[f"{k}.state_linearity.weight"] = (256, 16)
            expected[f"{k}.state_linearity.bias"] = (256,)
            expected[f"{k}.state_projection.weight"] = (16, 64)
    assert {k: v.shape for k, v in state.items()} == expected
    arrays = list(state.values())
    assert all(a.flags.writeable and a.flags.c_contiguous for a in arrays)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays)
                   for b in arrays[i + 1:])


# ------------------------------------------- files torch writes, both formats
def _varied_state(torch):
    """Views with offsets and strides over one shared storage, stride 0,
    every plain dtype, 0-d and empty tensors, a tensor twice."""
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 10, generator=g)
    state = collections.OrderedDict(
        base=base,
        transposed=base.t(),                 # strides (1, 10)
        row=base[2],                         # storage offset 20
        column=base[:, 3],                   # offset 3, stride 10
        sliced=base[1:5:2, 2:9:3],           # offset 12, strides (20, 3)
        expanded=torch.randn(1, 4, generator=g).expand(3, 4),  # stride 0
        half=torch.randn(5, generator=g).half(),
        double=torch.randn(2, 3, generator=g, dtype=torch.float64),
        scalar=torch.tensor(3.25),
        long=torch.arange(-3, 4),
        int32=torch.arange(6, dtype=torch.int32).reshape(2, 3),
        int16=torch.tensor([-7, 7], dtype=torch.int16),
        int8=torch.tensor([-128, 127], dtype=torch.int8),
        uint8=torch.tensor([0, 255], dtype=torch.uint8),
        bool=torch.tensor([True, False, True]),
        complex=torch.randn(2, generator=g, dtype=torch.complex64),
        empty=torch.zeros(0, 3),
    )
    state["tied"] = state["base"]            # the same tensor object twice
    return state


@pytest.fixture(params=["legacy", "zip"])
def save(request, torch, tmp_path):
    """Writes with torch.save in one format; returns the path."""
    def save(obj, name="saved.pt"):
        path = tmp_path / name
        torch.save(obj, path, _use_new_zipfile_serialization=(
            request.param == "zip"))
        assert zipfile.is_zipfile(path) == (request.param == "zip")
        return path
    return save


def test_views_dtypes_and_shared_storages(save, torch):
    path = save(_varied_state(torch))
    ours = load_torch_file(path)
    _assert_same(ours, torch.load(path, weights_only=True), torch)
    assert isinstance(ours, collections.OrderedDict)
    assert ours["scalar"].shape == () and ours["scalar"] == 3.25
    # torch aliases the views with base; ours are separate arrays
    for key in ("transposed", "row", "column", "sliced"):
        assert not np.shares_memory(ours[key], ours["base"]), key
    ours["base"][:] = 0
    assert ours["row"].any() and ours["tied"] is ours["base"]


def test_module_state_dicts_and_parameters(save, torch):
    """A real module's state dict (OrderedDict with ``_metadata``, int64
    buffers), Parameters (keep_vars) and a tensor with a Python attribute."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(4, 3, num_layers=2)
    norm = torch.nn.BatchNorm1d(3)
    tagged = torch.ones(2, 2)
    tagged.note = "kept by torch, dropped by us"
    obj = {"lstm": lstm.state_dict(), "norm": norm.state_dict(),
           "params": norm.state_dict(keep_vars=True), "tagged": tagged}
    path = save(obj)
    ours = load_torch_file(path)
    theirs = torch.load(path, weights_only=True)
    _assert_same(ours["lstm"], theirs["lstm"], torch)
    _assert_same(ours["norm"], theirs["norm"], torch)
    _assert_same(ours["params"], theirs["params"], torch)
    _assert_same(ours["tagged"], theirs["tagged"], torch)
    assert ours["norm"]["num_batches_tracked"].dtype == np.int64


def test_checkpoint_with_a_state_dict_inside(save, torch):
    model = torch.nn.Linear(3, 2)
    path = save({"epoch": 3, "state_dict": model.state_dict(),
                 "note": "best"})
    state = read_torch_state_dict(path)
    assert list(state) == ["weight", "bias"]
    np.testing.assert_array_equal(state["weight"],
                                  model.weight.detach().numpy())
    assert load_torch_file(path)["epoch"] == 3


def test_zip_archive_folder_of_any_name(torch, tmp_path):
    """torch names the folder after the file in some versions: any name."""
    state = _varied_state(torch)
    path = tmp_path / "saved.pt"
    torch.save(state, path)
    renamed = tmp_path / "renamed.pt"
    _rewrite_zip(path, renamed, lambda name, data: (
        "my model v2/" + name.split("/", 1)[1], data))
    _assert_same(load_torch_file(renamed),
                 torch.load(path, weights_only=True), torch)


def test_zip_big_endian(torch, tmp_path):
    """A byteorder record 'big' (a file saved on a big-endian machine): the
    same values as the little-endian original."""
    g = torch.Generator().manual_seed(1)
    base = torch.randn(3, 5, generator=g)
    state = {"base": base, "view": base[1:, 2:], "other": torch.randn(
        4, generator=g)}
    path = tmp_path / "little.pt"
    torch.save(state, path)

    def swap(name, data):
        if name.endswith("/byteorder"):
            return name, b"big"
        if "/data/" in name:  # every storage here is float32
            return name, np.frombuffer(data, "<f4").astype(">f4").tobytes()
        return name, data

    big = tmp_path / "big.pt"
    _rewrite_zip(path, big, swap)
    ours = load_torch_file(big)
    _assert_same(ours, torch.load(path, weights_only=True), torch)
    _assert_same(ours, torch.load(big, weights_only=True), torch)
    assert ours["base"].dtype.isnative


def _rewrite_zip(src, dst, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            name, data = edit(info.filename, zin.read(info))
            zout.writestr(name, data)


# ------------------------------------- torch's formats, written here by hand
class _Global:
    """A global named in a hand-written pickle (``torch._utils`` ...)."""

    def __init__(self, qualname):
        self.module, self.name = qualname.rsplit(".", 1)

    def __call__(self, *args):  # pickle wants a callable; never called
        raise AssertionError(self.name)


REBUILD_V2 = _Global("torch._utils._rebuild_tensor_v2")
FLOAT = _Global("torch.FloatStorage")


class _StorageId:
    """A storage as its persistent id."""

    def __init__(self, *pid):
        self.pid = ("storage",) + pid


class _Reduce:
    """An object pickled as ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _tensor(storage, offset, size, stride):
    return _Reduce(REBUILD_V2, storage, offset, size, stride, False,
                   collections.OrderedDict())


class _Pickler(pickle._Pickler):
    """Protocol-2 pickles with torch's globals and persistent ids."""

    dispatch = dict(pickle._Pickler.dispatch)

    def _save_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = _save_global

    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _StorageId) else None


def _pickle(obj):
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def _legacy_file(path, obj, storages, raw=None):
    """torch's legacy format: ``storages`` is ``{key: array}`` (float32);
    ``raw``: the object's pickle as bytes, written instead of ``obj``'s."""
    with open(path, "wb") as f:
        for head in (MAGIC_NUMBER, PROTOCOL_VERSION,
                     {"protocol_version": PROTOCOL_VERSION,
                      "little_endian": True,
                      "type_sizes": {"short": 2, "int": 4, "long": 4}}):
            f.write(pickle.dumps(head, protocol=2))
        f.write(_pickle(obj) if raw is None else raw)
        f.write(pickle.dumps(sorted(storages), protocol=2))
        for key in sorted(storages):
            f.write(struct.pack("<q", storages[key].size))
            f.write(storages[key].astype("<f4").tobytes())
    return path


def _zip_file(path, obj, storages, folder="archive"):
    """torch's zip format (``data.pkl``, ``data/<key>``, ``byteorder``)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{folder}/data.pkl", _pickle(obj))
        z.writestr(f"{folder}/byteorder", "little")
        for key, array in storages.items():
            z.writestr(f"{folder}/data/{key}", array.astype("<f4").tobytes())
        z.writestr(f"{folder}/version", "3\n")
    return path


def _strided(root, offset, size, stride):
    """numpy's own reading of a strided view: the expected values."""
    return np.lib.stride_tricks.as_strided(
        root[offset:], size, [s * root.itemsize for s in stride]).copy()


def test_legacy_storage_views(tmp_path, request):
    """torch 0.4 pickled a storage view as (view key, offset, size) of its
    root storage; torch >= 1.0 never writes one, so written here."""
    root = np.arange(20, dtype=np.float32) / 4
    whole = _StorageId(FLOAT, "7", "cuda:0", 20, None)
    view = _StorageId(FLOAT, "7", "cuda:0", 20, ("8", 5, 12))
    obj = collections.OrderedDict(
        whole=_tensor(whole, 0, (4, 5), (5, 1)),
        in_view=_tensor(view, 1, (2, 3), (4, 1)),
        view_t=_tensor(view, 0, (3, 2), (1, 3)))
    path = _legacy_file(tmp_path / "views.pkl", obj, {"7": root})
    state = read_torch_state_dict(path)
    np.testing.assert_array_equal(state["whole"], root.reshape(4, 5))
    np.testing.assert_array_equal(state["in_view"],
                                  _strided(root, 6, (2, 3), (4, 1)))
    np.testing.assert_array_equal(state["view_t"],
                                  _strided(root, 5, (3, 2), (1, 3)))
    try:
        import torch
    except ImportError:
        return
    theirs = torch.load(path, weights_only=True, map_location="cpu")
    _assert_same(state, dict(theirs), torch)


@pytest.mark.parametrize("fmt", ["legacy", "zip"])
def test_hand_written_files_read_as_torch_reads_them(tmp_path, fmt, torch):
    """The writer above is torch's format: torch.load agrees with us."""
    root = np.arange(12, dtype=np.float32) - 5.5
    storage = _StorageId(FLOAT, "0", "cpu", 12) if fmt == "zip" else (
        _StorageId(FLOAT, "0", "cpu", 12, None))
    obj = {"m": _tensor(storage, 2, (2, 3), (1, 2)),
           "s": _tensor(storage, 11, (), ())}
    write = _zip_file if fmt == "zip" else _legacy_file
    path = write(tmp_path / "hand.pt", obj, {"0": root})
    ours = load_torch_file(path)
    np.testing.assert_array_equal(ours["m"], _strided(root, 2, (2, 3),
                                                      (1, 2)))
    assert ours["s"].shape == () and ours["s"] == 5.5
    _assert_same(ours, torch.load(path, weights_only=True), torch)


# ------------------------------------------------- hostile pickles: refused
class _Payload:
    """Unpickling it would run ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _hostile_files(tmp_path, payload):
    """The payload as a bare pickle, as the object of a legacy file, inside
    a state dict in a legacy file, as a zip file's data.pkl."""
    inside = collections.OrderedDict(w=payload)
    return {
        "bare": tmp_path / "bare.pkl",
        "legacy": _legacy_file(tmp_path / "legacy.pkl", payload, {}),
        "legacy_value": _legacy_file(tmp_path / "value.pkl", inside, {}),
        "zip": _zip_file(tmp_path / "zip.pt", inside, {}),
    }


@pytest.mark.parametrize("where", ["bare", "legacy", "legacy_value", "zip"])
@pytest.mark.parametrize("func, qualname", [
    (os.system, "posix.system"),
    (eval, "__builtin__.eval"),  # protocol 2 writes Python 2's name
])
def test_pickle_that_would_run_code_is_refused(tmp_path, where, func,
                                               qualname):
    marker = tmp_path / "ran"
    command = f"open({str(marker)!r}, 'w').close()"
    payload = _Payload(func, f"touch {marker}" if func is os.system
                       else command)
    files = _hostile_files(tmp_path, payload)
    files["bare"].write_bytes(pickle.dumps(payload, protocol=2))
    path = files[where]
    with pytest.raises(TorchPickleError) as info:
        load_torch_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: refused global '{qualname}' in ")
    assert "\n" not in message
    assert not marker.exists()


def test_call_of_an_allowed_name_that_is_no_function_is_refused(tmp_path):
    """``torch.FloatStorage`` may be named (a storage type), not called."""
    path = _legacy_file(tmp_path / "call.pkl",
                        {"w": _Reduce(FLOAT, 10)}, {})
    with pytest.raises(TorchPickleError,
                       match=r"call\.pkl: refused a call to "
                             r"torch\.FloatStorage in the saved object"):
        load_torch_file(path)


@pytest.mark.parametrize("qualname, why", [
    ("torch.BFloat16Storage", "bfloat16: no numpy dtype"),
    ("torch.nn.modules.linear.Linear", "a whole module"),
    # numpy's array rebuild is allowed (test_alignment), no other numpy
    ("numpy.frombuffer", "a numpy function"),
    ("numpy.core.multiarray.scalar", "a numpy scalar"),
])
def test_other_torch_and_numpy_globals_are_refused(tmp_path, qualname, why):
    storage = _StorageId(_Global(qualname), "0", "cpu", 4, None)
    path = _legacy_file(tmp_path / "other.pkl",
                        {"w": _tensor(storage, 0, (4,), (1,))}, {})
    with pytest.raises(TorchPickleError,
                       match=rf"other\.pkl: refused global '{qualname}'"):
        load_torch_file(path)


def test_state_set_on_an_allowed_function_is_refused(tmp_path):
    """BUILD (slot state) on a rebuild function would set its
    ``__defaults__`` for every later file in this process: refused."""
    name = b"__defaults__"
    raw = (b"\x80\x02ctorch._utils\n_rebuild_tensor\nN}"
           + b"X" + struct.pack("<I", len(name)) + name
           + b"ctorch\nFloatStorage\n\x85s\x86b.")
    path = _legacy_file(tmp_path / "build.pkl", None, {}, raw=raw)
    with pytest.raises(TorchPickleError,
                       match=r"build\.pkl: refused state set on "
                             r"torch\._utils\._rebuild_tensor in the saved "
                             r"object"):
        load_torch_file(path)
    from bilm_keras.weights import torch_pickle
    assert torch_pickle._rebuild_tensor.__defaults__ == (None,)


def test_global_outside_a_tensor(tmp_path):
    path = _legacy_file(tmp_path / "bare.pkl", {"w": FLOAT}, {})
    with pytest.raises(TorchPickleError,
                       match=r"bare\.pkl: expected tensors, dicts and plain "
                             r"values, found the global torch\.FloatStorage "
                             r"outside a tensor$"):
        load_torch_file(path)


@pytest.mark.slow
def test_nesting_deeper_than_the_recursion_limit(tmp_path):
    depth = 100_000  # lists in lists: EMPTY_LIST x depth, APPEND x depth-1
    raw = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    path = _legacy_file(tmp_path / "deep.pkl", None, {}, raw=raw)
    with pytest.raises(TorchPickleError,
                       match=r"deep\.pkl: expected dicts of tensors, found "
                             r"containers nested deeper than Python's "
                             r"recursion limit$"):
        load_torch_file(path)


def test_tensor_past_its_storage_is_refused(tmp_path):
    storage = _StorageId(FLOAT, "0", "cpu", 6, None)
    path = _legacy_file(tmp_path / "past.pkl",
                        {"w": _tensor(storage, 2, (2, 3), (3, 1))},
                        {"0": np.zeros(6, np.float32)})
    with pytest.raises(TorchPickleError,
                       match=r"past\.pkl: refused a tensor of size \(2, 3\), "
                             r"stride \(3, 1\), offset 2 past the end of its "
                             r"storage of 6 elements"):
        load_torch_file(path)


# ------------------------------------------------------ not a torch file
def test_truncated_in_the_storage_bytes(tiny_model, tmp_path):
    raw = (tiny_model / "token_embedder.pkl").read_bytes()
    path = tmp_path / "cut.pkl"
    path.write_bytes(raw[:-100])
    with pytest.raises(TorchPickleError,
                       match=r"cut\.pkl: storage '\d+' at byte \d+: expected "
                             r"\d+ bytes \(count and \d+ x float32\), found "
                             r"\d+ \(the file is cut short\)$"):
        read_torch_state_dict(path)


def test_truncated_in_the_pickle(tiny_model, tmp_path):
    raw = (tiny_model / "encoder.pkl").read_bytes()
    path = tmp_path / "cut.pkl"
    path.write_bytes(raw[:600])
    with pytest.raises(TorchPickleError,
                       match=r"cut\.pkl: expected the saved object, found a "
                             r"damaged or truncated pickle \("):
        read_torch_state_dict(path)


def test_extra_bytes_after_the_last_storage(tiny_model, tmp_path):
    path = tmp_path / "long.pkl"
    path.write_bytes((tiny_model / "encoder.pkl").read_bytes() + b"\0" * 3)
    with pytest.raises(TorchPickleError,
                       match=r"long\.pkl: expected the file to end after the "
                             r"last storage, found 3 more bytes"):
        read_torch_state_dict(path)


def test_truncated_zip(tmp_path):
    path = _zip_file(tmp_path / "full.pt",
                     {"w": _tensor(_StorageId(FLOAT, "0", "cpu", 64), 0,
                                   (64,), (1,))},
                     {"0": np.ones(64, np.float32)})
    cut = tmp_path / "cut.pt"
    cut.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(TorchPickleError,
                       match=r"cut\.pt: expected a torch zip archive \(torch "
                             r">= 1\.6\), found a damaged or truncated one "
                             r"\(BadZipFile: "):
        load_torch_file(cut)


def test_zip_storage_record_of_the_wrong_size(tmp_path):
    path = _zip_file(tmp_path / "short.pt",
                     {"w": _tensor(_StorageId(FLOAT, "0", "cpu", 8), 0,
                                   (8,), (1,))},
                     {"0": np.ones(6, np.float32)})
    with pytest.raises(TorchPickleError,
                       match=r"short\.pt: archive/data/0: expected 32 bytes "
                             r"\(8 x float32\), found 24"):
        load_torch_file(path)


@pytest.mark.parametrize("content, found", [
    (b"not a pickle", r"found b'not a pi'"),
    (b"", r"found an empty file"),
    (b"\x80\x02}q\x00.", r"found a pickled dict"),  # a pickle, not torch's
])
def test_not_a_torch_file(tmp_path, content, found):
    path = tmp_path / "model.pkl"
    path.write_bytes(content)
    with pytest.raises(TorchPickleError, match=rf"model\.pkl: expected a "
                                               rf"PyTorch file.*{found}$"):
        load_torch_file(path)


def test_tar_of_torch_before_0_4(tmp_path):
    path = tmp_path / "old.pt"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("storages")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(TorchPickleError,
                       match=r"old\.pt: expected a torch\.save file of torch "
                             r">= 0\.4, found a tar archive"):
        load_torch_file(path)


@pytest.mark.parametrize("obj, found", [
    ([1, 2], (r"expected a PyTorch state dict \(a dict of tensors\), "
              r"found list")),
    ({"w": 3}, r"key 'w': expected a tensor, found int"),
])
def test_not_a_state_dict(tmp_path, obj, found):
    path = _legacy_file(tmp_path / "obj.pkl", obj, {})
    with pytest.raises(TorchPickleError, match=rf"obj\.pkl: {found}$"):
        read_torch_state_dict(path)
