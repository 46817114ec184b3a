"""Where a training step's time goes, by op group, on the mid-size
configuration of ``train_throughput.py`` (its fast path, the default).

Runs ``--steps`` steps under ``tf.profiler``, sums each TensorFlow op's
time on the executor threads (``tf_Compute``), groups the ops by name
scope (char-CNN + projection, highway, the LSTM recurrence forward and its
hand-written backward pass, each with its XLA-compiled gate kernels, the
sampled softmax, the optimizer with the gradient clipping) and prints ONE
JSON line: per group its seconds, its share of the summed op time, its
FLOPs per step (from the options, forward and backward, the char-CNN and
highway on distinct tokens only) and its GFLOP/s as a fraction of a 2048²
float32 matmul timed in the same process. Op times overlap (two executor
threads), so a group's wall time is estimated as its share of the profiled
wall time. How full the executor threads were:
``threads_busy_ms_per_step`` (the time with 0, 1, 2 ops running) and
``gaps_over_1ms_ms_per_step`` (no op for over 1 ms: between two steps).
The input pipeline runs on tf.data's own threads and is timed apart
(``input_s_per_step``: ``next()`` on the dataset alone).

``--step_products`` instead times the recurrence's four per-step
products alone, at the configuration's shapes (both directions batched):
``h W_h`` and ``m W_P`` forward, ``dz W_h^T`` and ``dp W_P^T`` in the
hand-written backward pass, each with the batch as rows (as the window
runs them) and with the weights on the left (as the inference step runs
them), and their sum over a window (``unroll`` steps, 2 layers): a floor
under a training step's time that no change around them can lower.

Usage::

    python bench/train_profile.py [--steps 8]
    python bench/train_profile.py --step_products
    python bench/train_profile.py --quick --steps 2   # CI smoke run
"""

import argparse
import collections
import glob
import json
import os
import re
import tempfile
import time

import common
import train_throughput as tt  # (sets the environment first)

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from bilm_keras.options import BiLMOptions  # noqa: E402
from bilm_keras.training.threads import (  # noqa: E402
    configure_training_threads,
)

#: op scope -> group; the first match wins
GROUPS = [
    ("sampled softmax", r".*softmax"),
    ("highway", r".*char_cnn[^/]*/highway"),
    ("char-CNN + projection", r".*char_cnn"),
    # the training step puts the Adagrad update in "adagrad_update"; the
    # repeated rows of sparse gradients are summed at the top level
    ("optimizer + clipping", r"(global_norm|clip_by_global_norm"
                             r"|adagrad_update|UnsortedSegmentSum"
                             r"|Unique)(_\d+)?(/|$)"),
    ("LSTM forward", r"language_model"),
    # the hand-written backward pass's ops carry no layer scope
    ("LSTM backward", r".*"),
]


def group_of(scope: str) -> str:
    backward = scope.startswith("gradient_tape/")
    name = scope.removeprefix("gradient_tape/")
    for group, pattern in GROUPS:
        if re.match(pattern, name):
            if group == "LSTM forward" and backward:
                return "LSTM backward"
            if group in ("highway", "char-CNN + projection"):
                return f"{group} {'backward' if backward else 'forward'}"
            return group
    raise AssertionError(scope)


def step_products(c: dict, reps: int = 200, rounds: int = 5) -> dict:
    """Microseconds of each per-step product of the window, both layouts,
    medians of ``rounds`` (alternating), and the sum over a window."""
    import statistics

    d, b, p, u = 2, c["batch"], c["proj"], c["dim"]
    g = 4 * u
    shapes = {  # name: (rows-right operands, weights-on-left operands)
        "forward h W_h": (((d, b, p), (d, p, g)), ((d, g, p), (d, p, b))),
        "forward m W_P": (((d, b, u), (d, u, p)), ((d, p, u), (d, u, b))),
        "backward dz W_h^T": (((d, b, g), (d, g, p)),
                              ((d, p, g), (d, g, b))),
        "backward dp W_P^T": (((d, b, p), (d, p, u)),
                              ((d, u, p), (d, p, b))),
    }
    mm = tf.function(lambda a, w: tf.matmul(a, w))
    operands = {(name, k): (tf.random.normal(x), tf.random.normal(y))
                for name, layouts in shapes.items()
                for k, (x, y) in enumerate(layouts)}
    times = collections.defaultdict(list)
    for x, y in operands.values():
        mm(x, y).numpy()
    for _ in range(rounds):
        for key, (x, y) in operands.items():
            start = time.perf_counter()
            for _ in range(reps):
                out = mm(x, y)
            out.numpy()
            times[key].append((time.perf_counter() - start) / reps * 1e6)
    result = {}
    for name in shapes:
        rows, left = (statistics.median(times[(name, k)]) for k in (0, 1))
        result[name] = dict(rows_right_us=round(rows),
                            weights_left_us=round(left),
                            ratio=round(rows / left, 3))
    per_window = 2 * c["unroll"] / 1e3  # 2 layers, ms
    return dict(
        products=result,
        window_ms_rows_right=round(per_window * sum(
            r["rows_right_us"] for r in result.values()), 1),
        window_ms_weights_left=round(per_window * sum(
            r["weights_left_us"] for r in result.values()), 1),
        shapes=dict(directions=d, batch=b, projection=p, units=u,
                    unroll=c["unroll"]),
        load_avg_1min=os.getloadavg()[0],
    )


#: the event an asynchronous kernel's run is recorded as; its ``name`` stat
#: is the op's scope (the XLA-compiled gate math of the LSTM step is such
#: a kernel: a ``PartitionedCall`` whose compiled body runs inside it)
ASYNC_KERNEL_EVENT = "ExecutorState::ProcessAsync::Start"


def _stat(stat_names, event, key):
    """The string value of ``event``'s stat ``key`` (stored inline or as a
    reference into the plane's ``stat_names``), or None."""
    for stat in event.stats:
        if stat_names[stat.metadata_id].name == key:
            return (stat_names[stat.ref_value].name if stat.ref_value
                    else stat.str_value)
    return None


def executor_ops(space):
    """``(scope, start_ps, duration_ps)`` of every op run on the executor
    threads (``tf_Compute``) of a profile's ``XSpace``: the synchronous
    ops, recorded as ``scope:OpType`` events, and the asynchronous ones
    (the XLA kernels), recorded as :data:`ASYNC_KERNEL_EVENT` with the
    scope in their ``name`` stat. The executor's own bookkeeping events
    (``ExecutorState::Process``, which nest the ops, allocations, ...)
    are left out."""
    for plane in space.planes:
        stat_names = plane.stat_metadata
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if name == ASYNC_KERNEL_EVENT:
                    scope = _stat(stat_names, event, "name")
                    if scope is None:
                        continue
                elif ":" in name.replace("::", ""):
                    scope = name.split(":")[0]
                else:  # bookkeeping
                    continue
                start = line.timestamp_ns * 1000 + event.offset_ps
                yield scope, start, event.duration_ps


def threads_busy(spans) -> dict:
    """From ops' ``(start, end)`` on the executor threads (picoseconds):
    ``by_count`` {n: time with exactly n ops running} from the first op's
    start to the last one's end, and ``long_gaps``, the time in gaps of
    over 1 ms with no op running."""
    edges = sorted([(start, 1) for start, _ in spans]
                   + [(end, -1) for _, end in spans])
    by_count = collections.Counter()
    long_gaps, running, previous = 0, 0, edges[0][0]
    for time_ps, change in edges:
        by_count[running] += time_ps - previous
        if running == 0 and time_ps - previous > 1e9:
            long_gaps += time_ps - previous
        running += change
        previous = time_ps
    return dict(by_count=by_count, long_gaps=long_gaps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--quick", action="store_true",
                        help="tiny model (CI smoke run; asserts nothing)")
    parser.add_argument("--step_products", action="store_true",
                        help="only the recurrence's per-step products, "
                             "both layouts")
    args = parser.parse_args(argv)
    c = tt.config(args.quick)
    if args.step_products:  # TensorFlow's pools, as its figures were taken
        print(json.dumps(step_products(c, reps=5 if args.quick else 200,
                                       rounds=1 if args.quick else 5)))
        return
    # the thread pools `bilm-keras train` runs with
    threads = configure_training_threads()
    options = BiLMOptions.from_dict(tt.options_dict(c), source="bench")
    with tempfile.TemporaryDirectory() as folder:
        vocab_file, corpus = tt.write_corpus(folder, c["vocab"], 3000)
        vocab = tt.load_vocab(vocab_file, options)
        runner = tt.Runner(options, c, corpus, vocab)
        runner.run(3)
        runner.n_tokens = runner.n_distinct = 0
        plain_s = runner.run(args.steps)
        logdir = os.path.join(folder, "profile")
        tf.profiler.experimental.start(logdir)
        profiled_s = runner.run(args.steps)
        tf.profiler.experimental.stop()
        start = time.perf_counter()
        for _ in range(args.steps):
            next(runner.batches)
        input_s = (time.perf_counter() - start) / args.steps
        space = xplane_pb2.XSpace()
        path = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"),
                         recursive=True)[0]
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    n = 512 if args.quick else 2048
    peak = common.matmul_gflops(n, n, n)
    seconds = collections.Counter()
    spans = []  # (start, end) of every op, picoseconds
    for scope, start, duration in executor_ops(space):
        seconds[group_of(scope)] += duration / 1e12
        spans.append((start, start + duration))
    total = sum(seconds.values())
    # FLOPs per step: batch x unroll words, both directions, 3x forward
    words = c["batch"] * c["unroll"] * 2
    per_token = tt.flops_per_token(c)
    highway = 2 * 2 * 2 * sum(n for _, n in c["filters"]) ** 2
    distinct = runner.n_distinct / runner.n_tokens
    flops = {
        "char-CNN + projection": (per_token["char_cnn"] - highway)
        * words * distinct,
        "highway": highway * words * distinct,
        "LSTM": per_token["lstm"] * words,
        "sampled softmax": per_token["softmax"] * words,
    }
    step_s = profiled_s / args.steps
    groups = {}
    for group, s in seconds.most_common():
        base = group.removesuffix(" forward").removesuffix(" backward")
        entry = dict(seconds_per_step=round(s / args.steps, 4),
                     share=round(s / total, 3))
        if base in flops:
            # forward 1x, backward 2x the forward FLOPs
            f = flops[base] * (2 if group.endswith("backward") else 1)
            wall = step_s * s / total
            entry["gflop_per_step"] = round(f / 1e9, 3)
            entry["fraction_of_peak"] = round(f / wall / 1e9 / peak, 3)
        groups[group] = entry
    all_flops = 3 * sum(flops.values())
    busy = threads_busy(spans)
    print(json.dumps(dict(
        groups=groups,
        steps=args.steps,
        step_s=round(plain_s / args.steps, 4),
        step_s_profiled=round(step_s, 4),
        input_s_per_step=round(input_s, 4),
        distinct_token_fraction=round(distinct, 3),
        gflop_per_step=round(all_flops / 1e9, 2),
        achieved_fraction_of_peak=round(
            all_flops / (plain_s / args.steps) / 1e9 / peak, 3),
        matmul_peak_gflops=round(peak, 1),
        # of the profiled steps' wall time: how long 0, 1, 2, ... executor
        # threads ran an op, and the gaps longer than 1 ms with none (the
        # time between two steps), ms per step
        threads_busy_ms_per_step={
            str(n): round(ps / 1e9 / args.steps, 2)
            for n, ps in sorted(busy["by_count"].items())},
        gaps_over_1ms_ms_per_step=round(
            busy["long_gaps"] / 1e9 / args.steps, 2),
        threads=threads,
        quick=args.quick,
        load_avg_1min=os.getloadavg()[0],
    )))


if __name__ == "__main__":
    main()
