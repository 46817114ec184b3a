"""The top-level usage scripts run as documented and print their shapes.

``usage_character.py`` runs as a user runs it, in a fresh process; the two
others (the same scripts' ``main(argv)``, what their command line calls)
run in this process: they need no fresh process, and TensorFlow is then
imported once, not once per script."""

import os
import subprocess
import sys

import pytest

from helpers import REPO_ROOT, load_script


def _fresh_process(script, model_dir, capsys, monkeypatch):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, script, str(model_dir)], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _in_process(script, model_dir, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))  # `from usage_character`
    load_script(script).main([script, str(model_dir)])
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "script,expected,run",
    [
        pytest.param("usage_character.py",
                     "context ELMo          (2, 11, 32)", _fresh_process,
                     marks=pytest.mark.slow, id="usage_character.py-"
                     "context ELMo          (2, 11, 32)"),
        # the same path as bilm-tf's copies in test_bilm_tf_usage_scripts;
        # one fresh-process run (above) stays in the quick tier
        pytest.param("usage_token.py", "context ELMo          (2, 11, 32)",
                     _in_process, marks=pytest.mark.slow,
                     id="usage_token.py-context ELMo          (2, 11, 32)"),
        pytest.param("usage_cached.py", "sentence 2: (3, 6, 32)",
                     _in_process, marks=pytest.mark.slow,
                     id="usage_cached.py-sentence 2: (3, 6, 32)"),
    ],
)
def test_usage_script(model_dir, script, expected, run, capsys,
                      monkeypatch):
    stdout = run(script, model_dir, capsys, monkeypatch)
    assert expected in stdout
    if script == "usage_token.py":
        diff = float(stdout.rsplit("=", 1)[1])
        assert diff < 1e-5
