"""``bench/manylangs_pkl_reader.py --quick`` runs end to end (no speed
asserted): torch writes a model in ELMoForManyLangs' released format, it is
converted with our reader (torch blocked) and with torch.load, alternating,
and both give the same weights."""

import pytest

from helpers import require_installed, run_bench_script

require_installed("torch", "torch")


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(tmp_path):
    # one round (each reader's process once): the script end to end and
    # its JSON; more rounds only repeat the same processes
    report = run_bench_script(
        "manylangs_pkl_reader.py", "--quick", "--rounds", "1", "--workdir",
        tmp_path)
    assert report["weights_equal"] is True
    assert report["ours"]["torch_imported"] is False
    assert report["torch"]["torch_imported"] is True
    for reader in ("ours", "torch"):
        assert len(report[reader]["convert_s_all"]) == 1
        assert report[reader]["tensorflow_imported"] is False
        assert 0 < report[reader]["read_s"] < report[reader]["convert_s"]
    assert len(report["convert_s_ratio_by_round"]) == 1
