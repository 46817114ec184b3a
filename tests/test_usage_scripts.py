"""The top-level usage scripts run as documented and print their shapes."""

import os
import subprocess
import sys

import pytest

from helpers import REPO_ROOT


@pytest.mark.parametrize(
    "script,expected",
    [
        pytest.param("usage_character.py",
                     "context ELMo          (2, 11, 32)",
                     marks=pytest.mark.slow),
        # the same path as bilm-tf's copies in test_bilm_tf_usage_scripts;
        # one fresh-process run (above) stays in the quick tier
        pytest.param("usage_token.py", "context ELMo          (2, 11, 32)",
                     marks=pytest.mark.slow),
        pytest.param("usage_cached.py", "sentence 2: (3, 6, 32)",
                     marks=pytest.mark.slow),
    ],
)
def test_usage_script(model_dir, script, expected):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, script, str(model_dir)], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert expected in result.stdout
    if script == "usage_token.py":
        diff = float(result.stdout.rsplit("=", 1)[1])
        assert diff < 1e-5
