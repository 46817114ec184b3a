"""bench/compare_revisions.py: both trees run, alternating, medians and
ratios per key (a tiny script stands in for a benchmark)."""

import json
import subprocess
import sys

import compare_revisions  # bench/ is on the tests' path (setup.cfg)
from helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "compare_revisions.py"


def test_summarize_medians_and_ratio_skip_constants():
    base = [{"speed": 10.0, "config": {"dim": 4}}, {"speed": 30.0,
                                                    "config": {"dim": 4}},
            {"speed": 20.0, "config": {"dim": 4}}]
    head = [{"speed": 20.0, "config": {"dim": 4}}, {"speed": 33.0,
                                                    "config": {"dim": 4}},
            {"speed": 30.0, "config": {"dim": 4}}]
    summary = compare_revisions.summarize(base, head)
    assert list(summary) == ["speed"]  # config.dim is the same everywhere
    assert summary["speed"]["base"] == 20.0
    assert summary["speed"]["head"] == 30.0
    # per-round ratios 2.0, 1.1, 1.5: median 1.5
    assert summary["speed"]["ratio_head_over_base"] == 1.5
    assert summary["speed"]["round_ratios"] == [2.0, 1.1, 1.5]


def test_runs_each_tree_alternating(tmp_path):
    probe = tmp_path / "probe.py"
    # prints 1.0 in the exported base tree, 2.0 in the working tree
    probe.write_text(
        "import json, os, pathlib\n"
        f"head = pathlib.Path.cwd() == pathlib.Path({str(REPO_ROOT)!r})\n"
        "print('noise')\n"
        "print(json.dumps({'tree': 2.0 if head else 1.0,"
        " 'has_bilm': float(os.path.isdir('bilm_keras'))}))\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--base", "HEAD", "--rounds", "2",
         "--", str(probe)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rounds"] == 2
    assert result["summary"]["tree"] == {
        "base": 1.0, "head": 2.0, "ratio_head_over_base": 2.0,
        "round_ratios": [2.0, 2.0]}
    assert "has_bilm" not in result["summary"]  # 1.0 in both trees
    assert done.stderr.count("done") == 4
