"""``bench/first_call.py --quick`` runs end to end (no speed asserted): a
tiny model trained and embedded with, in fresh processes, the package as
it is and with AutoGraph forced back on, to the same loss and vectors."""

import json
import subprocess
import sys

from helpers import REPO_ROOT


def test_quick_bench_reports_one_json_line(tmp_path):
    # one round: each way's two fresh processes once
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "first_call.py"),
         "--quick", "--rounds", "1", "--steps", "2", "--sentences", "4",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["model"]["preset"] == "tiny"
    assert report["steps_run"] == [2]
    assert report["vectors_equal"] is True
    assert report["perplexity_equal"] is True
    for way in ("product", "autograph"):
        assert len(report[way]["train_s_all"]) == 1
        assert 0 < report[way]["train_s"] < report[way]["train_process_s"]
        assert 0 < report[way]["first_batch_s"] \
            < report[way]["embed_process_s"]
    assert report["train_s_ratio_autograph_over_product"] > 0
