"""``bench/train_profile.py --quick`` runs end to end (no speed asserted):
a profiled training step split into its op groups, one JSON line."""

import json
import os
import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "train_profile.py"


def test_train_profile_quick_runs():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--steps", "2"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True, text=True, timeout=180, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["quick"] is True
    groups = result["groups"]
    # the step's main pieces each found by their op names
    for group in ("LSTM forward", "LSTM backward", "sampled softmax",
                  "optimizer + clipping", "char-CNN + projection forward"):
        assert groups[group]["seconds_per_step"] > 0, group
    assert abs(sum(g["share"] for g in groups.values()) - 1) < 0.01
    assert result["gflop_per_step"] > 0 and result["step_s"] > 0


def test_step_products_quick_runs():
    # the four per-step products, both layouts, summed over a window
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--step_products"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True, text=True, timeout=180, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    products = result["products"]
    assert set(products) == {"forward h W_h", "forward m W_P",
                             "backward dz W_h^T", "backward dp W_P^T"}
    unroll = result["shapes"]["unroll"]
    # the window's sum is 2 layers x unroll steps of the four products
    total = sum(p["rows_right_us"] for p in products.values())
    assert abs(result["window_ms_rows_right"]
               - 2 * unroll * total / 1e3) < 0.1
