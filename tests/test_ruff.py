"""ruff, with the rules pyproject.toml selects, finds nothing in the
package, ``bin/``, ``tests/``, ``bench/``, ``examples/``, ``fuzz/`` and
the usage scripts (the quick tier's lint; ``.ci/run`` runs it first too).

ruff comes with the ``test`` extra; missing, this test skips saying so
(fails under ``CI=true``)."""

import subprocess
import sys

from helpers import REPO_ROOT, require_extra

CHECKED = ["bilm_keras", "bin", "tests", "bench", "examples", "fuzz",
           "usage_character.py", "usage_token.py", "usage_cached.py"]


def _ruff(*args, stdin=None):
    require_extra("ruff", "test")
    # --no-cache: a test writes nothing into the repository
    return subprocess.run([sys.executable, "-m", "ruff", "check",
                           "--no-cache", *args], cwd=REPO_ROOT, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    done = _ruff(*CHECKED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_configured_rules_apply():
    """The configuration is the one read (a module of the package with an
    unused import, a line of 81 characters and a closure over a loop
    variable is refused for each), so the test above can fail."""
    source = ("import os\n"
              f"x = {'1' * 77}\n"
              "fs = []\n"
              "for i in range(3):\n"
              "    fs.append(lambda: i)\n")
    done = _ruff("--stdin-filename", "bilm_keras/example.py",
                 "--output-format", "concise", "-", stdin=source)
    assert done.returncode == 1
    found = {line.split(": ")[1].split()[0]
             for line in done.stdout.splitlines() if ": " in line}
    assert {"F401", "E501", "B023"} <= found, done.stdout
