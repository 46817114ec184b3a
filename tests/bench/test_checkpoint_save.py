import json
import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "checkpoint_save.py"


def test_checkpoint_save_quick_runs(tmp_path):
    """The tiny model's saves, through the training loop's writer: the
    size it reports is the checkpoint's on disk, and nothing is left."""
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--dir", str(tmp_path)],
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
             "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["model"], result["passes"]) == ("tiny", 2)
    assert len(result["save_s_all"]) == 2 and result["save_s"] > 0
    # 2 x 128 cells, 10,000 words: the softmax and its accumulator alone
    # are 2 x 10,000 x 32 floats
    assert result["bytes"] > 2 * 10_000 * 32 * 4
    assert list(tmp_path.iterdir()) == []
