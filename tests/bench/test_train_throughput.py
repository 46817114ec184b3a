import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_train_throughput_quick_runs():
    result = run_bench_script(
        "train_throughput.py", "--quick", "--passes", "1", "--steps", "2",
        "--warmup", "1", "--compare", one_line=False)
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


@pytest.mark.nightly
def test_train_throughput_adapt_quick_runs():
    """``--adapt``: random weights written in bilm-tf's layout by a child
    process, loaded as ``--init_weights``, warm-up and full steps timed."""
    # the random weights written by a helper child
    # forked from the command server (run_bench_script)
    result = run_bench_script(
        "train_throughput.py", "--adapt", "--quick", "--passes", "1",
        "--steps", "2", "--warmup", "1", one_line=False)
    assert result["benchmark"] == "train_throughput --adapt"
    assert result["tokens_per_second"] > 0
    assert result["warmup_tokens_per_second"] > 0
    assert result["peak_rss_mb"] > 0
    assert result["hdf5_mb"] > 0
