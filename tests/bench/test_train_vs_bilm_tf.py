"""``bench/train_vs_bilm_tf.py`` needs a checkout of bilm-tf's code,
which is not part of this repository: without one it refuses in one line
before it trains anything. (Its ``--quick`` run, given a checkout, is the
smoke check of the script: ``--bilm_tf_dir``, bench/README.md.)"""

import subprocess
import sys

from helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "train_vs_bilm_tf.py"


def test_refuses_without_bilm_tfs_code(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--bilm_tf_dir", str(tmp_path),
         "--quick"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        "train_vs_bilm_tf.py: error: --bilm_tf_dir: expected a checkout of "
        f"allenai/bilm-tf (with bilm/training.py), found {str(tmp_path)!r}")
    assert proc.stdout == ""
