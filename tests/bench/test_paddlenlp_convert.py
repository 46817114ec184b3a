"""``bench/paddlenlp_convert.py --quick`` runs end to end (no speed
asserted): a tiny PaddleNLP ``.pdparams`` is converted with our reader and
with numpy's own ``pickle.load``, alternating, and both give the same
weights."""

import json
import subprocess
import sys

import pytest

from helpers import REPO_ROOT, user_env


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "paddlenlp_convert.py"),
         "--quick", "--rounds", "2", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=user_env(),
        check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["weights_equal"] is True
    for reader in ("ours", "pickle"):
        assert len(report[reader]["convert_s_all"]) == 2
        assert report[reader]["tensorflow_imported"] is False
        assert 0 < report[reader]["read_s"] < report[reader]["convert_s"]
    assert len(report["convert_s_ratio_by_round"]) == 2
