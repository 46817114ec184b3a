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


#: a hand-built sketch of bilm-tf's training graph, in the order its
#: train() builds it: (name, type, input op names) -> expected group
BILM_TF_OPS = [
    ("lm/char_embed", "VariableV2", [], "char-CNN + projection forward"),
    ("lm/embedding_lookup", "GatherV2", ["lm/char_embed"],
     "char-CNN + projection forward"),
    ("lm/CNN/Conv2D", "Conv2D", ["lm/embedding_lookup"],
     "char-CNN + projection forward"),
    ("lm/CNN_proj/W_proj", "VariableV2", [],
     "char-CNN + projection forward"),
    # the highway layers run at the model's top scope
    ("lm/CNN_high_0/W_carry", "VariableV2", [], "highway forward"),
    ("lm/MatMul", "MatMul", ["lm/CNN/Conv2D", "lm/CNN_high_0/W_carry"],
     "highway forward"),
    ("lm/Sigmoid", "Sigmoid", ["lm/MatMul"], "highway forward"),
    # the projection: the first op to read its weights
    ("lm/MatMul_4", "MatMul", ["lm/Sigmoid", "lm/CNN_proj/W_proj"],
     "char-CNN + projection forward"),
    ("lm/add_8", "AddV2", ["lm/MatMul_4"], "char-CNN + projection forward"),
    ("lm/MultiRNNCellZeroState/zeros", "Fill", [], "LSTM forward"),
    ("lm/RNN_0/rnn/lstm_cell/MatMul", "MatMul", ["lm/add_8"],
     "LSTM forward"),
    ("lm/stack", "Pack", ["lm/RNN_0/rnn/lstm_cell/MatMul"], "LSTM forward"),
    ("lm/softmax/W", "VariableV2", [], "sampled softmax"),
    ("lm/sampled_softmax_loss/MatMul", "MatMul",
     ["lm/stack", "lm/softmax/W"], "sampled softmax"),
    ("lm/Mean", "Mean", ["lm/sampled_softmax_loss/MatMul"],
     "sampled softmax"),
    ("lm/gradients/Fill", "Fill", [], "other"),
    ("lm/gradients/lm/Mean_grad/Tile", "Tile", ["lm/gradients/Fill"],
     "sampled softmax"),
    ("lm/gradients/lm/stack_grad/unstack", "Unpack",
     ["lm/gradients/lm/Mean_grad/Tile"], "LSTM backward"),
    ("lm/gradients/lm/RNN_0/rnn/lstm_cell/MatMul_grad/MatMul_1", "MatMul",
     ["lm/gradients/lm/stack_grad/unstack"], "LSTM backward"),
    # a sum of gradients: the group of its first input that has one
    ("lm/gradients/AddN", "AddN",
     ["lm/gradients/Fill",
      "lm/gradients/lm/RNN_0/rnn/lstm_cell/MatMul_grad/MatMul_1"],
     "LSTM backward"),
    ("lm/gradients/lm/MatMul_4_grad/MatMul", "MatMul", ["lm/gradients/AddN"],
     "char-CNN + projection backward"),
    ("lm/gradients/lm/Sigmoid_grad/SigmoidGrad", "SigmoidGrad",
     ["lm/gradients/lm/MatMul_4_grad/MatMul"], "highway backward"),
    ("lm/gradients/lm/CNN/Conv2D_grad/Conv2DBackpropFilter",
     "Conv2DBackpropFilter", [], "char-CNN + projection backward"),
    ("Unique", "Unique", [], "optimizer + clipping"),
    ("global_norm_3/L2Loss", "L2Loss", [], "summaries"),
    ("norm_pre_clip/lm/CNN/W_cnn_0_0", "ScalarSummary",
     ["global_norm_3/L2Loss"], "summaries"),
    ("clip_by_global_norm/global_norm/L2Loss", "L2Loss", [],
     "optimizer + clipping"),
    ("Adagrad/update_lm/CNN/W_cnn_0/ApplyAdagrad", "ApplyAdagrad", [],
     "optimizer + clipping"),
]


def test_bilm_tf_groups_by_scope_order_and_forward_op():
    from train_profile import bilm_tf_groups

    groups = bilm_tf_groups((n, t, i) for n, t, i, _ in BILM_TF_OPS)
    assert groups == {n: g for n, _, _, g in BILM_TF_OPS}


def test_runtime_names_are_grouped_through_the_optimizers_renaming():
    # names the graph optimizer gives the nodes it fuses or rewrites
    from train_profile import bilm_tf_groups, runtime_group

    group = runtime_group(bilm_tf_groups(
        (n, t, i) for n, t, i, _ in BILM_TF_OPS))
    assert group("lm/Sigmoid") == "highway forward"
    assert group("ArithmeticOptimizer/AddOpsRewrite_lm/gradients/AddN") \
        == "LSTM backward"
    assert group("lm/sampled_softmax_loss/ConstantFolding/new") \
        == "sampled softmax"
    assert group("lm/gradients/lm/Sigmoid_grad/added_node") \
        == "highway backward"
    assert group("lm/RNN_0/rnn/lstm_cell/split_fused") == "LSTM forward"
    assert group("_SOURCE") == "other"
