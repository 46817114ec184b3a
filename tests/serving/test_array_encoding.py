import numpy as np
import pytest

from bilm_keras.serving.array_encoding import decode_array, encode_array


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_base64_is_little_endian_and_round_trips(dtype):
    array = np.arange(24, dtype=dtype).reshape(2, 3, 4) / 7
    text = encode_array(array.astype(np.dtype(dtype).newbyteorder(">")),
                        "base64")
    back = decode_array(text, dtype, (2, 3, 4))
    np.testing.assert_array_equal(back, array)
    # what a client of any language reads: the little-endian bytes
    raw = np.frombuffer(__import__("base64").b64decode(text),
                        "<f4" if dtype == "float32" else "<f2")
    np.testing.assert_array_equal(raw, array.ravel())


def test_json_is_exact_nested_lists():
    array = np.asarray([[0.1, 1 / 3]], np.float32)
    listed = encode_array(array, "json")
    assert np.asarray(listed, np.float32).tobytes() == array.tobytes()
