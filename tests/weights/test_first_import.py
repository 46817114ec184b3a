"""The weight modules import cleanly as a process's first import."""

import subprocess
import sys

import pytest

from helpers import REPO_ROOT, user_env


@pytest.mark.slow
@pytest.mark.parametrize("statement", [
    "from bilm_keras.weights import load_bilm_tf_hdf5",
    "from bilm_keras.weights.bilm_tf_hdf5 import weight_table",
])
def test_first_import(statement):
    # bilm_tf_hdf5 -> models -> bidirectional_language_model -> bilm_tf_hdf5
    # was a cycle that only a process starting here met
    # (a fresh interpreter, not helpers.python_argv: a command server
    # has imported every module already)
    proc = subprocess.run([sys.executable, "-c", statement], cwd=REPO_ROOT,
                          env=user_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
