"""``bench/train_profile.py --quick`` runs end to end (no speed asserted):
a profiled training step split into its op groups, one JSON line."""

import json
import os
import pathlib
import subprocess

import pytest

from helpers import python_argv

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "train_profile.py"


@pytest.mark.nightly
def test_train_profile_quick_runs():
    out = subprocess.run(
        python_argv() + [str(BENCH), "--quick", "--steps", "2"],
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
    # the busy-thread times cover the profiled steps, first op to last
    busy_s = sum(result["threads_busy_ms_per_step"].values()) / 1e3
    assert 0.5 * result["step_s_profiled"] < busy_s \
        <= 1.05 * result["step_s_profiled"]


@pytest.mark.nightly
def test_step_products_quick_runs():
    # the four per-step products, both layouts, summed over a window
    out = subprocess.run(
        python_argv() + [str(BENCH), "--quick", "--step_products"],
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


def test_threads_busy_counts_overlaps_and_gaps():
    # ops (picoseconds): two overlapping for 1 ms, then a 2 ms gap (over
    # 1 ms: a long one), then one op; plus a 0.5 ms gap (not long)
    from train_profile import threads_busy

    ms = 10**9
    busy = threads_busy([(0, 2 * ms), (1 * ms, 3 * ms), (5 * ms, 6 * ms),
                         (6.5 * ms, 7 * ms)])
    assert busy["by_count"][2] == 1 * ms
    assert busy["by_count"][1] == 2 * ms + 1 * ms + 0.5 * ms
    assert busy["by_count"][0] == 2 * ms + 0.5 * ms
    assert busy["long_gaps"] == 2 * ms


def test_executor_ops_counts_xla_kernels_and_skips_bookkeeping():
    # a hand-built profile: on an executor thread, the executor's own
    # span nesting a plain op and an XLA kernel (an async kernel whose
    # scope is its "name" stat), and an allocation; on another line, an
    # op that is not the executor's
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    from train_profile import ASYNC_KERNEL_EVENT, executor_ops

    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    for i, name in enumerate(["ExecutorState::Process",
                              "language_model/lstm/MatMul:_MklMatMul",
                              ASYNC_KERNEL_EVENT, "MemoryAllocation",
                              "other:MatMul"], start=1):
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = name
    plane.stat_metadata[1].name = "name"
    plane.stat_metadata[2].name = "PartitionedCall_3"  # a ref'd value
    compute = plane.lines.add(name="tf_Compute", timestamp_ns=1)
    for metadata_id, offset, duration in [(1, 0, 100), (2, 10, 30),
                                          (3, 50, 40), (4, 60, 0)]:
        event = compute.events.add(metadata_id=metadata_id,
                                   offset_ps=offset, duration_ps=duration)
        if metadata_id == 3:
            event.stats.add(metadata_id=1, ref_value=2)
    plane.lines.add(name="tf_data").events.add(metadata_id=5,
                                               duration_ps=7)
    assert list(executor_ops(space)) == [
        ("language_model/lstm/MatMul", 1010, 30),
        ("PartitionedCall_3", 1050, 40),
    ]
