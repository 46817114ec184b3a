"""``bench/embed_throughput.py --quick`` runs end to end (no speed asserted):
it writes random weights through the real saver, loads them through the
real loader, and reports one JSON line with every figure."""

import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(quick_bench_workdir):
    report = run_bench_script(
        "embed_throughput.py", "--quick", "--baseline", "--levers",
        "--passes", "1", "--n_sentences", "20", "--workdir",
        quick_bench_workdir)
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
    assert (quick_bench_workdir / "weights.hdf5").exists()


@pytest.mark.nightly
def test_quick_as_user_reports_the_peak(quick_bench_workdir):
    # the memory figure: public API only, passes in a loop
    report = run_bench_script(
        "embed_throughput.py", "--quick", "--as_user", "--n_sentences", "20",
        "--workdir", quick_bench_workdir, one_line=False)
    assert report["as_user"] is True and report["passes"] == 3
    assert len(report["pass_s_all"]) == 3
    assert report["peak_rss_mib"] > 0
    assert report["bulk_mmap_threshold_fixed"] is True
