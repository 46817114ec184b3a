"""``bench/manylangs_convert.py --quick`` runs end to end (no speed
asserted): it writes a model in ELMoForManyLangs' released format (legacy
.pkl), converts it in a process without TensorFlow, embeds with the result
and with a bilm-tf model, and reports one JSON line."""

import pytest

from helpers import require_installed, run_bench_script

require_installed("torch", "torch")


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(tmp_path):
    report = run_bench_script(
        "manylangs_convert.py", "--quick", "--rounds", "1",
        "--convert_rounds", "1", "--workdir", tmp_path)
    assert report["convert_s"] > 0 and report["convert_peak_rss_mib"] > 0
    assert report["convert"]["tensorflow_imported"] is False
    assert sorted(p.name for p in (tmp_path / "converted").iterdir()) == [
        "char.dic", "lm_weights.hdf5", "options.json", "word.dic"]
    for model in ("manylangs", "bilm_tf"):
        assert report[model]["tokens_per_s"] > 0
        assert report[model]["peak_rss_mib"] > 0
    assert len(report["tokens_per_s_ratio_by_round"]) == 1
