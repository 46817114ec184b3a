import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_checkpoint_save_quick_runs(tmp_path):
    """The tiny model's saves, through the training loop's writer: the
    size it reports is the checkpoint's on disk, and nothing is left."""
    # a child of the command server (run_bench_script): the saves are
    # timed in the script, no process start is measured
    result = run_bench_script(
        "checkpoint_save.py", "--quick", "--dir", tmp_path)
    assert (result["model"], result["passes"]) == ("tiny", 2)
    assert len(result["save_s_all"]) == 2 and result["save_s"] > 0
    # 2 x 128 cells, 10,000 words: the softmax and its accumulator alone
    # are 2 x 10,000 x 32 floats
    assert result["bytes"] > 2 * 10_000 * 32 * 4
    assert list(tmp_path.iterdir()) == []
