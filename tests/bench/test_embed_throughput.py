"""``bench/embed_throughput.py --quick`` runs end to end (no speed asserted):
it writes random weights through the real saver, loads them through the
real loader, and reports one JSON line with every figure."""

import json
import os
import subprocess
import sys

from helpers import REPO_ROOT


def test_quick_bench_reports_one_json_line(tmp_path):
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "embed_throughput.py"),
         "--quick", "--baseline", "--levers", "--passes", "1",
         "--n_sentences", "20",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    for mode in ("fast", "baseline"):
        assert report[mode]["tokens_per_s"] > 0
        assert 0 < report[mode]["fraction_of_step_peak_nominal"]
    assert report["corpus"]["sentences"] == 20
    assert 5 * 20 <= report["corpus"]["tokens"] <= 40 * 20
    assert report["peak_rss_mb"] > 0 and report["startup_s"] > 0
    levers = report["levers"]
    for key in ("lstms_batch_27_s",
                "lstms_batch_27_directions_concurrent_s"):
        assert levers[key] > 0
    assert levers["char_cnn_xla_max_abs_diff"] < 1e-4
    # one batch's resident memory above the process's before it: sampled
    # (TensorFlow's CPU allocator keeps no statistics in some builds)
    assert levers["lstms_batch_27_rss_peak_above_mib"] >= 0
    assert (tmp_path / "weights.hdf5").exists()


def test_quick_as_user_reports_the_peak(tmp_path):
    # the memory figure of the issue: public API only, passes in a loop
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "embed_throughput.py"),
         "--quick", "--as_user", "--n_sentences", "20",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["as_user"] is True and report["passes"] == 3
    assert len(report["pass_s_all"]) == 3
    assert report["peak_rss_mib"] > 0
    assert report["bulk_mmap_threshold_fixed"] is True
