"""``bench/embed_vs_paddle.py`` needs Paddle 1.8.5 in a Python 3.7 venv and
upstream's model code (its docstring); without them it says so in one
line. (``--quick`` with both is the smoke check of the script.)"""

import subprocess
import sys

from helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "embed_vs_paddle.py"


def test_without_paddle_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--paddle_python",
         str(tmp_path / "none"), "--upstream_dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "--paddle_python: expected a Python 3.7 with paddlepaddle 1.8.5, "
        f"found {str(tmp_path / 'none')!r}")
