"""``bench/first_call.py --quick`` runs end to end (no speed asserted): a
tiny model trained and embedded with, in fresh processes, the package as
it is and with AutoGraph forced back on, to the same loss and vectors."""

import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(tmp_path):
    # one round: each way's two fresh processes once
    report = run_bench_script(
        "first_call.py", "--quick", "--rounds", "1", "--steps", "2",
        "--sentences", "4", "--workdir", tmp_path)
    assert report["model"]["preset"] == "tiny"
    assert report["steps_run"] == [2]
    assert report["vectors_equal"] is True
    assert report["perplexity_equal"] is True
    for way in ("product", "autograph"):
        assert len(report[way]["train_s_all"]) == 1
        assert 0 < report[way]["train_s"] < report[way]["train_process_s"]
        assert 0 < report[way]["first_batch_s"] \
            < report[way]["embed_process_s"]
    assert report["train_s_ratio_autograph_over_product"] > 0
