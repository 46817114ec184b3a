"""``bench/embed_precision.py --quick`` runs end to end (no speed
asserted): both precisions embed the corpus through the real loader, and
one JSON line reports the rates, the CPU flags and the distances."""

import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(quick_bench_workdir):
    report = run_bench_script(
        "embed_precision.py", "--quick", "--state_variants",
        "--n_sentences", "12", "--workdir", quick_bench_workdir)
    assert set(report["tokens_per_s"]) == {"float32", "bfloat16"}
    assert all(rate > 0 for rate in report["tokens_per_s"].values())
    assert isinstance(report["cpu_flags"], list)
    for part in ("layer_0", "layer_1", "layer_2", "average"):
        assert 0.99 < report["distance_to_float32"][part]["cosine_min"] <= 1
    assert report["state_variants"]["tokens"]["long"] > 100


@pytest.mark.nightly  # a benchmark script end to end
def test_fixtures_report_the_distance_per_model():
    report = run_bench_script("embed_precision.py", "--fixtures")
    for model in ("bilm_tf", "manylangs"):
        for part in ("layer_0", "layer_1", "layer_2", "average"):
            stats = report[model][part]
            assert 0.99 < stats["cosine_min"] <= stats["cosine_median"] <= 1
            assert stats["tokens"] == 134
