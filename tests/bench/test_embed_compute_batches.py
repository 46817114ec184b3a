import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_embed_compute_batches_quick_runs():
    """Two compute-batch settings on the tiny model, one round: each
    embeds the whole corpus, and the first is its own reference."""
    # a child of the command server (run_bench_script): the passes are
    # timed in the script, no process start is measured
    result = run_bench_script("embed_compute_batches.py", "--quick")
    assert result["model"] == "tiny" and result["rounds"] == 1
    settings = result["settings"]
    assert list(settings) == ["batch32", "budget (default)"]
    assert settings["batch32"]["speedup_vs_first"] == 1.0
    for figures in settings.values():
        assert figures["tokens_per_s"] > 0
        assert len(figures["pass_s_all"]) == 1
        assert 0 < figures["fraction_of_square_peak_nominal"]
