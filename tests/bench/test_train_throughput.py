import json
import os
import pathlib
import subprocess

from helpers import python_argv

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "train_throughput.py"


def test_train_throughput_quick_runs():
    out = subprocess.run(
        python_argv() + [str(BENCH), "--quick", "--passes", "1", "--steps",
         "2", "--warmup", "1", "--compare"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True, text=True, timeout=180, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["quick"] is True
    assert result["tokens_per_second"] > 0
    assert result["peak_rss_mb"] > 0
    # the fast path ran, against the plain path in the same process
    assert result["settings"]["unroll_windows"] is True
    assert result["settings"]["dedup_tokens"] is True
    assert result["baseline"] == "plain"
    assert result["baseline_tokens_per_second"] > 0
    assert 0 < result["distinct_token_fraction"] <= 1
    assert result["matmul_peak_gflops"] > 0
    assert 0 < result["peak_fraction"] < 1


def test_train_throughput_adapt_quick_runs():
    """``--adapt``: random weights written in bilm-tf's layout by a child
    process, loaded as ``--init_weights``, warm-up and full steps timed."""
    out = subprocess.run(
        python_argv() + [str(BENCH), "--adapt", "--quick", "--passes", "1",
         "--steps", "2", "--warmup", "1"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True, text=True, timeout=180, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "train_throughput --adapt"
    assert result["tokens_per_second"] > 0
    assert result["warmup_tokens_per_second"] > 0
    assert result["peak_rss_mb"] > 0
    assert result["hdf5_mb"] > 0
