import json
import os
import pathlib
import subprocess
import sys

import pytest

from bilm_keras.training.threads import (
    THREAD_VARIABLES,
    available_cores,
    cpu_training_threads,
)

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "train_threads.py"


@pytest.mark.nightly
def test_train_threads_quick_runs():
    """Each setting in its own process: the pools it asked for are the
    ones the child reports, ratios against the first setting."""
    env = {k: v for k, v in os.environ.items()
           if k not in THREAD_VARIABLES}
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--rounds", "1",
         "--passes", "1", "--settings", "0,0", "auto"],
        env=dict(env, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""),
        capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    settings = result["settings"]
    assert result["baseline"] == "0,0"
    assert settings["0,0"]["threads"] == [0, 0]
    assert settings["0,0"]["ratio"] == 1.0
    assert settings["auto"]["threads"] == list(
        cpu_training_threads(available_cores()))
    assert settings["auto"]["tokens_per_s"] > 0


def test_train_threads_refuses_a_malformed_setting():
    out = subprocess.run([sys.executable, str(BENCH), "--settings", "1-2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--settings: expected INTRA,INTER" in out.stderr
    assert "'1-2'" in out.stderr
