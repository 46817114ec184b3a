"""ELMoForManyLangs conversion needs no PyTorch: a fresh process in which
``import torch`` fails converts the fixture's tiny.model, and the converted
weights, run through the independent numpy forward pass
(tests/numpy_reference.py), give upstream's ``reference.hdf5`` to 1e-5."""

import subprocess
import sys

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
    # a fresh interpreter, not helpers.python_argv: the conversion is
    # proven to import no TensorFlow
    proc = subprocess.run(
        [sys.executable, "-c", CONVERT_WITHOUT_TORCH,
         str(manylangs_fixtures / "tiny.model"), str(out)],
        cwd=REPO_ROOT, env=user_env(), capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]

    nr.assert_reproduces_manylangs_reference(
        out, manylangs_fixtures / "reference.hdf5")
