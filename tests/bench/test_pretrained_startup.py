"""``bench/pretrained_startup.py --quick`` runs end to end (no speed
asserted): a tiny model goes through a local mirror into a fresh cache,
then is started by name and by path, alternating, in fresh processes with
no mirror to reach, and both ways give the same vectors."""

import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(tmp_path):
    # one round: each way's fresh process once (3 processes with the
    # writer's, not 5); a second round only repeats them in the other
    # order, which proves nothing more about the script running end to end
    report = run_bench_script(
        "pretrained_startup.py", "--quick", "--rounds", "1", "--sentences", "4",
        "--tokens", "5", "--workdir", tmp_path)
    assert report["vectors_equal"] is True
    assert report["model"]["preset"] == "tiny"
    for way in ("by_name", "by_path"):
        assert len(report[way]["startup_s_all"]) == 1
        assert 0 < report[way]["load_s"] < report[way]["startup_s"] \
            < report[way]["process_s"]
    assert len(report["startup_s_ratio_by_round"]) == 1
    assert 0 < report["resolve_cached_s"] < report["by_name"]["load_s"]
    # the model was cached once, under its registry name
    assert (tmp_path / "cache" / "models" / "elmo-original"
            / "lm_weights.hdf5").is_file()
