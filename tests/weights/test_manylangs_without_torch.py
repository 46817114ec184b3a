"""ELMoForManyLangs conversion needs no PyTorch: a fresh process in which
``import torch`` fails converts the fixture's tiny.model, and the converted
weights, run through the independent numpy forward pass
(tests/numpy_reference.py), give upstream's ``reference.hdf5`` to 1e-5."""

import json
import subprocess
import sys

import h5py
import numpy as np

import numpy_reference as nr
from helpers import REPO_ROOT, user_env

CONVERT_WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
from bilm_keras.weights.manylangs_conversion import convert_manylangs
convert_manylangs(sys.argv[1], sys.argv[2])
assert sys.modules["torch"] is None
assert "tensorflow" not in sys.modules
"""


def test_conversion_without_torch_reproduces_upstream(manylangs_fixtures,
                                                      tmp_path):
    out = tmp_path / "converted"
    proc = subprocess.run(
        [sys.executable, "-c", CONVERT_WITHOUT_TORCH,
         str(manylangs_fixtures / "tiny.model"), str(out)],
        cwd=REPO_ROOT, env=user_env(), capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]

    weights = nr.load_hdf5_weights(out / "lm_weights.hdf5")
    options = json.loads((out / "options.json").read_text())
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as ref:
        n = len([k for k in ref.keys() if k.isdigit()])
        chars = [ref[f"char_ids/{i}"][...] for i in range(n)]
        words = [ref[f"word_ids/{i}"][...] for i in range(n)]
        expected = [ref[str(i)][...] for i in range(n)]
    # upstream's ids, shifted by +1 (0 is padding), in one padded batch
    N = max(len(w) for w in words)
    char_ids = np.zeros((n, N, chars[0].shape[1]), np.int64)
    word_ids = np.zeros((n, N), np.int64)
    for i in range(n):
        char_ids[i, :len(chars[i])] = chars[i] + 1
        word_ids[i, :len(words[i])] = words[i] + 1
    result = nr.bilm_forward(weights, options, char_ids=char_ids,
                             word_ids=word_ids)
    layers, lengths = nr.remove_bos_eos(result["layers"], result["lengths"])
    assert n == 15
    for i in range(n):
        got = layers[i, :, :lengths[i]]
        assert got.shape == expected[i].shape
        np.testing.assert_allclose(got, expected[i], rtol=0, atol=1e-5,
                                   err_msg=f"sentence {i}")
