"""``bench/pretrained_startup.py --quick`` runs end to end (no speed
asserted): a tiny model goes through a local mirror into a fresh cache,
then is started by name and by path, alternating, in fresh processes with
no mirror to reach, and both ways give the same vectors."""

import json
import subprocess

from helpers import REPO_ROOT, python_argv


def test_quick_bench_reports_one_json_line(tmp_path):
    # one round: each way's fresh process once (3 processes with the
    # writer's, not 5); a second round only repeats them in the other
    # order, which proves nothing more about the script running end to end
    proc = subprocess.run(
        python_argv() + [str(REPO_ROOT / "bench" / "pretrained_startup.py"),
         "--quick", "--rounds", "1", "--sentences", "4", "--tokens", "5",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
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
