"""``bench/train_vs_bilm_tf.py`` and ``bench/train_profile.py
--bilm_tf_dir`` need a checkout of bilm-tf's code, which is not part of
this repository: without one each refuses in one line before it trains
anything. (Their ``--quick`` runs, given a checkout, are the smoke
checks of the scripts: ``--bilm_tf_dir``, bench/README.md.)"""

import subprocess
import sys

import pytest

from helpers import REPO_ROOT


@pytest.mark.parametrize("script", ["train_vs_bilm_tf.py",
                                    "train_profile.py"])
def test_refuses_without_bilm_tfs_code(tmp_path, script):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / script),
         "--bilm_tf_dir", str(tmp_path), "--quick"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        f"{script}: error: --bilm_tf_dir: expected a checkout of "
        f"allenai/bilm-tf (with bilm/training.py), found {str(tmp_path)!r}")
    assert proc.stdout == ""
