"""The ``.pdparams`` reader: the fixture Paddle 2.6.2 wrote reads to what
numpy's own unpickler gives, under both numpy module names; a pickle that
names anything but numpy arrays is refused before its code can run."""

import os
import pathlib
import pickle

import numpy as np
import pytest

from bilm_keras.weights.paddle_pdparams import (
    STRUCTURED_NAMES_KEY,
    PdparamsError,
    read_pdparams,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"
PDPARAMS = FIXTURES / "elmo.pdparams"


def _trusted_load(path):
    # the committed fixture, read by numpy's own (unrestricted) unpickler
    with open(path, "rb") as f:
        return pickle.load(f)


def _assert_same(found, expected):
    assert found.keys() == expected.keys()
    for key, value in expected.items():
        if key == STRUCTURED_NAMES_KEY:
            assert found[key] == value
        else:
            assert found[key].dtype == value.dtype, key
            np.testing.assert_array_equal(found[key], value, err_msg=key)


def test_fixture_reads_as_numpy_reads_it():
    assert b"numpy.core.multiarray" in PDPARAMS.read_bytes()
    state = read_pdparams(PDPARAMS)
    _assert_same(state, _trusted_load(PDPARAMS))
    assert state[STRUCTURED_NAMES_KEY][
        "_token_embding_layer._char_embedding_layer.weight"] == \
        "embedding_0.w_0"
    # views of the pickle's bytes, not copies
    assert not state["_linear_layer.weight"].flags.writeable


def test_numpy2_module_name_reads_alike(tmp_path):
    # numpy >= 2 pickles its arrays under numpy._core
    path = tmp_path / "numpy2.pdparams"
    path.write_bytes(pickle.dumps(_trusted_load(PDPARAMS), protocol=4))
    assert b"numpy._core.multiarray" in path.read_bytes()
    assert b"numpy.core.multiarray" not in path.read_bytes()
    _assert_same(read_pdparams(path), _trusted_load(PDPARAMS))


def test_other_dtypes_orders_and_byte_orders(tmp_path):
    arrays = {
        "f64": np.arange(6, dtype=np.float64).reshape(2, 3),
        "f16": np.arange(4, dtype=np.float16),
        "i64": np.arange(5, dtype=np.int64),
        "fortran": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),
        "big_endian": np.arange(3, dtype=">f4"),
        "bool": np.array([True, False]),
        "empty": np.zeros((0, 4), np.float32),
        "zero_dim": np.array(2.5, np.float32),
    }
    path = tmp_path / "kinds.pdparams"
    path.write_bytes(pickle.dumps(arrays, protocol=4))
    found = read_pdparams(path)
    for key, value in arrays.items():
        np.testing.assert_array_equal(found[key], value, err_msg=key)
        assert found[key].shape == value.shape, key
        assert found[key].dtype.isnative and found[key].flags.c_contiguous


class _RunsCode:
    """Pickles to ``os.system(command)``."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_code_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pdparams"
    state = _trusted_load(PDPARAMS)
    state["_linear_layer.bias"] = _RunsCode(f"touch {marker}")
    path.write_bytes(pickle.dumps(state, protocol=4))
    with pytest.raises(PdparamsError) as e:
        read_pdparams(path)
    message = str(e.value)
    assert "\n" not in message
    assert str(path) in message
    assert "system" in message and "never code" in message
    assert not marker.exists()


@pytest.mark.parametrize("payload, found", [
    # a class that is not an array, rebuilt by numpy's own function
    ((b"\x80\x04cnumpy.core.multiarray\n_reconstruct\n"
     b"cbuiltins\nobject\n(K\x00\x85C\x01b\x87R."), "builtins.object"),
    # an object array: its data would be pickled objects
    (b"\x80\x04cnumpy\ndtype\n(X\x02\x00\x00\x00O8\x89\x88tR.",
     "a dtype 'O8'"),
    # state set on one of the allowed globals (would patch it for good)
    (b"\x80\x04cnumpy\ndtype\n}X\x01\x00\x00\x00aK\x01sb.",
     "state set on numpy.dtype"),
    (b"\x80\x04P1\n.", "persistent id"),
])
def test_disallowed_pickles_are_refused(tmp_path, payload, found):
    path = tmp_path / "bad.pdparams"
    path.write_bytes(payload)
    with pytest.raises(PdparamsError, match=found) as e:
        read_pdparams(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_cut_short_and_not_a_pickle(tmp_path):
    cut = tmp_path / "cut.pdparams"
    cut.write_bytes(PDPARAMS.read_bytes()[:5000])
    with pytest.raises(PdparamsError, match="cut short"):
        read_pdparams(cut)
    text = tmp_path / "text.pdparams"
    text.write_text("not a pickle\n")
    with pytest.raises(PdparamsError, match="not a .pdparams pickle"):
        read_pdparams(text)
    with pytest.raises(PdparamsError, match="file not found"):
        read_pdparams(tmp_path / "missing.pdparams")
    with pytest.raises(PdparamsError, match="expected a dict"):
        listed = tmp_path / "list.pdparams"
        listed.write_bytes(pickle.dumps([np.zeros(2)]))
        read_pdparams(listed)



@pytest.mark.parametrize("payload, claim", [
    # BININT's four bytes, two of them in the file
    (b"\x80\x02J\x01\x02", "4 bytes at byte 3, where 2 are left"),
    # a whole opcode, then no STOP: the next opcode's byte is missing
    (b"\x80\x02K\x01", "1 bytes at byte 4, where 0 are left"),
])
def test_a_small_read_past_the_end_is_cut_short(tmp_path, payload, claim):
    path = tmp_path / "cut.pdparams"
    path.write_bytes(payload)
    with pytest.raises(PdparamsError, match=rf"cut.pdparams: not a "
                       rf"\.pdparams pickle, or cut short \(an opcode "
                       rf"claiming {claim}\)$"):
        read_pdparams(path)

def test_array_with_too_few_bytes_is_refused(tmp_path):
    # protocol 3: no frames to resize
    data = pickle.dumps({"w": np.zeros((2, 3), np.float32)}, protocol=3)
    raw = np.zeros((2, 3), np.float32).tobytes()
    data = data.replace(b"\x18" + raw, b"\x14" + raw[:20])  # 24 -> 20 bytes
    path = tmp_path / "short.pdparams"
    path.write_bytes(data)
    with pytest.raises(PdparamsError, match=r"in 20 bytes \(expected 24\)"):
        read_pdparams(path)
