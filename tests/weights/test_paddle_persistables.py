"""Fluid ``save_persistables`` variable files read in plain numpy: the
files Paddle 1.8.5 wrote (tests/fixtures/paddle_baike/checkpoint/), and
each malformed header one line naming the file and the field."""

import struct

import numpy as np
import pytest

from bilm_keras.weights.paddle_model import PaddleFormatError
from bilm_keras.weights.paddle_persistables import (
    list_variables,
    read_header,
    read_variable,
)


@pytest.fixture(scope="module")
def checkpoint(paddle_baike_fixtures):
    return paddle_baike_fixtures / "checkpoint"


def _file(tmp_path, body: bytes, name="var"):
    path = tmp_path / name
    path.write_bytes(body)
    return path


def _tensor(desc: bytes, data: bytes, *, version=0, lod=(),
            tensor_version=0) -> bytes:
    """A variable file as Paddle's SerializeToStream lays it out."""
    out = struct.pack("<IQ", version, len(lod))
    for level in lod:
        raw = np.asarray(level, "<u8").tobytes()
        out += struct.pack("<Q", len(raw)) + raw
    return out + struct.pack("<Ii", tensor_version, len(desc)) + desc + data


def test_headers_of_paddles_files(checkpoint):
    h = read_header(checkpoint / "lstmp_2.w_1")
    assert (h.type_name, h.shape, h.lod) == ("FP32", (16, 8), ())
    assert read_header(checkpoint / "softmax_bias").shape == (35,)
    assert read_header(checkpoint / "embedding_para").shape == (35, 8)


def test_learning_rate_is_upstreams(checkpoint):
    """``learning_rate_0``: the 0.2 upstream's train.py passes Adagrad."""
    lr = read_variable(checkpoint / "learning_rate_0")
    assert lr.dtype == np.float32 and lr.shape == (1,)
    assert lr[0] == np.float32(0.2)


def test_list_variables(checkpoint):
    names = list_variables(checkpoint)
    assert "lstmp_3.b_0_moment_0" in names and "concat_1.tmp_0" in names
    # 19 parameters, their 19 accumulators, learning_rate_0 and the three
    # temporaries upstream marks persistable
    assert names == sorted(names) and len(names) == 42


def test_packed_dims_and_lod_refused(tmp_path):
    """Dims packed (wire type 2) read as unpacked ones; a LoD is read in
    the header, and its data refused: a parameter has none."""
    data = np.arange(6, dtype="<i8").tobytes()
    packed = b"\x08\x03\x12\x02\x03\x02"  # INT64, dims [3, 2] packed
    path = _file(tmp_path, _tensor(packed, data))
    value = read_variable(path)
    np.testing.assert_array_equal(value, np.arange(6).reshape(3, 2))
    with_lod = _file(tmp_path, _tensor(packed, data, lod=[[0, 1, 3]]),
                     name="with_lod")
    assert read_header(with_lod).lod == ((0, 1, 3),)
    with pytest.raises(PaddleFormatError, match="lod_level: expected 0"):
        read_variable(with_lod)


@pytest.mark.parametrize("body, pattern", [
    (_tensor(b"\x08\x05\x10\x01", b"\0" * 4, version=1),
     r"version: expected 0 \(a Fluid LoDTensor\), found 1"),
    (_tensor(b"\x08\x05\x10\x01", b"\0" * 4, tensor_version=2),
     r"tensor version: expected 0, found 2"),
    (_tensor(b"\x08\x05\x10\x01", b"\0" * 8),
     r"data: expected 4 bytes \(FP32 1\), found 8 \(bytes after the data\)"),
    (_tensor(b"\x08\x05" + b"\x10" + b"\xff" * 9 + b"\x01", b""),
     r"dims: expected sizes >= 0, found -1"),
    (_tensor(b"\x08\x05\x18\x01", b""),
     r"TensorDesc: expected fields 1 \(data type\) and 2 \(dims\), found"),
    (_tensor(b"\x10\x01", b"\0" * 4),
     r"TensorDesc: expected a data type \(field 1\), found none"),
    (_tensor(b"\x08\x05\x10", b""),
     r"TensorDesc: expected a complete varint, found a cut-short one"),
    (struct.pack("<IQ", 0, 99), r"lod_level: expected at most 8, found 99"),
    (b"\0\0", r"version: expected 4 bytes, found 2 \(file cut short\)"),
])
def test_malformed_file(tmp_path, body, pattern):
    path = _file(tmp_path, body)
    with pytest.raises(PaddleFormatError, match=pattern) as info:
        read_variable(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message


def test_not_a_directory(tmp_path):
    with pytest.raises(PaddleFormatError,
                       match=r"nowhere: expected a Paddle persistables "
                             r"directory, found"):
        list_variables(tmp_path / "nowhere")
