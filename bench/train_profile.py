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

``--bilm_tf_dir DIR`` profiles bilm-tf's own ``train()`` too, first, in
a child process (its unmodified code on TensorFlow 2 through
``bilm_tf_shim.py``, as ``train_vs_bilm_tf.py`` runs it), at the same
configuration, on the same corpus, under the same ``tf.profiler`` trace:
its loop's next-batch requests start and stop the trace around
``--steps`` steps after ``--skip`` + ``--steps`` unprofiled ones (whose
median is its ``step_s``). Its graph's ops are put in the same groups
(:func:`bilm_tf_groups`: by scope, by the order its model builds them,
a gradient by the op it differentiates), plus two groups of its own:
``summaries`` (the per-variable gradient norms and the summaries its
loop runs each step) and ``other``. Both sides run with the same thread
pools (ours, :mod:`bilm_keras.training.threads`, unless
``--bilm_tf_own_threads``) and the same oneDNN setting when
``TF_ENABLE_ONEDNN_OPTS`` is set (else each as its users run it: ours
with this CPU class's choice, bilm-tf with TensorFlow's own; each side
records ``onednn``). Prints a table of both sides' seconds per step and
shares by group, then one JSON line per side, bilm-tf's first, ours
last.

Usage::

    python bench/train_profile.py [--steps 8]
    python bench/train_profile.py --step_products
    python bench/train_profile.py --quick --steps 2   # CI smoke run
    TF_ENABLE_ONEDNN_OPTS=1 python bench/train_profile.py --steps 8 \
        --bilm_tf_dir ../bilm-tf                      # against bilm-tf
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
from bilm_tf_shim import (
    BILM_TF_ENV,
    check_bilm_tf_dir,
    import_bilm_tf,
    train_bilm_tf,
)

# The standard library only at import time: bilm-tf's child process runs
# this file and must import TensorFlow after its own environment is set,
# without bilm_keras (which may set this CPU class's oneDNN choice).
# Ours imports train_throughput first (it imports bilm_keras before
# TensorFlow, as a user's program does), in main().

#: TensorFlow's oneDNN switch, read at its import
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
#: the variables TensorFlow reads for its two thread pools' sizes
THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")

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

    import tensorflow as tf

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


def executor_ops(space, op_types=False):
    """``(scope, start_ps, duration_ps)`` of every op run on the executor
    threads (``tf_Compute``) of a profile's ``XSpace``: the synchronous
    ops, recorded as ``scope:OpType`` events, and the asynchronous ones
    (the XLA kernels), recorded as :data:`ASYNC_KERNEL_EVENT` with the
    scope in their ``name`` stat. The executor's own bookkeeping events
    (``ExecutorState::Process``, which nest the ops, allocations, ...)
    are left out. ``op_types``: ``(scope, op type, start_ps,
    duration_ps)``, an XLA kernel's type ``XLA kernel``."""
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
                    op_type = "XLA kernel"
                elif ":" in name.replace("::", ""):
                    scope, op_type = name.split(":")[:2]
                else:  # bookkeeping
                    continue
                start = line.timestamp_ns * 1000 + event.offset_ps
                yield (scope, op_type, start, event.duration_ps) if op_types \
                    else (scope, start, event.duration_ps)


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



def read_xspace(logdir: str):
    """The ``XSpace`` of the one profile written under ``logdir``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    path = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"),
                     recursive=True)[0]
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    return space


def op_seconds(space, group) -> tuple:
    """``(seconds by group, seconds by (group, op type), spans)`` of a
    profile's executor ops: ``group(scope)`` names each op's group; spans
    are ``(start, end)`` in picoseconds, for :func:`threads_busy`."""
    seconds, by_type = collections.Counter(), collections.Counter()
    spans = []
    for scope, op_type, start, duration in executor_ops(space, True):
        name = group(scope)
        seconds[name] += duration / 1e12
        by_type[name, op_type] += duration / 1e12
        spans.append((start, start + duration))
    return seconds, by_type, spans


def group_entries(seconds, by_type, steps: int) -> dict:
    """Per group: its seconds per step, its share of the op time and its
    three costliest op types' seconds per step (``ops``)."""
    total = sum(seconds.values())
    groups = {}
    for group, s in seconds.most_common():
        types = sorted(((t, v) for (g, t), v in by_type.items()
                        if g == group), key=lambda tv: -tv[1])[:3]
        groups[group] = dict(
            seconds_per_step=round(s / steps, 4), share=round(s / total, 3),
            ops={t: round(v / steps, 4) for t, v in types})
    return groups


def busy_figures(spans, steps: int) -> dict:
    """:func:`threads_busy` in ms per step, as the JSON line gives it."""
    busy = threads_busy(spans)
    return dict(
        # of the profiled steps' wall time: how long 0, 1, 2, ... executor
        # threads ran an op, and the gaps longer than 1 ms with none (the
        # time between two steps), ms per step
        threads_busy_ms_per_step={
            str(n): round(ps / 1e9 / steps, 2)
            for n, ps in sorted(busy["by_count"].items())},
        gaps_over_1ms_ms_per_step=round(busy["long_gaps"] / 1e9 / steps, 2),
    )


# ------------------------------------------------------ bilm-tf's graph
#: the groups of both sides, in the table's order; bilm-tf adds the last
#: two (its loop's summaries, and ops of neither side's groups)
TABLE_GROUPS = (
    "char-CNN + projection forward", "char-CNN + projection backward",
    "highway forward", "highway backward", "LSTM forward", "LSTM backward",
    "sampled softmax", "optimizer + clipping", "summaries", "other")

#: a forward group -> the group of its gradient's ops
BACKWARD_OF = {
    "char-CNN + projection forward": "char-CNN + projection backward",
    "highway forward": "highway backward",
    "LSTM forward": "LSTM backward",
    "sampled softmax": "sampled softmax",
}


#: the scope of a gradient op: bilm-tf takes its gradients in the
#: model's scope (``lm/gradients/``)
GRADIENTS = re.compile(r"(lm/)?gradients(_\d+)?/")


def _forward_op(name: str):
    """The op a gradient op differentiates, from its name
    (``lm/gradients/lm/x/MatMul_grad/MatMul_1`` -> ``lm/x/MatMul``), or
    None (a gradient op of no single op: a sum of gradients, a seed)."""
    parts = GRADIENTS.sub("", name, count=1).split("/")
    for i, part in enumerate(parts):
        if part.endswith("_grad"):
            return "/".join(parts[:i] + [part.removesuffix("_grad")])
    return None


def bilm_tf_groups(ops) -> dict:
    """``{op name: group}`` for bilm-tf's training graph.

    ``ops``: ``(name, type, input op names)`` of every op, in the order
    the graph was built (``Graph.get_operations()``). bilm-tf's model
    (scope ``lm/``) applies its highway layers and its projection at the
    model's top scope, so its forward ops are grouped by the order it
    builds them: char-CNN until the highway layers' variables
    (``lm/CNN_high_*``), highway until the first op that reads the
    projection's (``lm/CNN_proj/``), projection (with the char-CNN) until
    the LSTMs' zero states or ``lm/RNN_*``, the LSTMs (with the stacking
    and the dropout of their outputs) until ``lm/softmax`` or
    ``lm/sampled_softmax_loss``, the sampled softmax (and the loss) to
    the end. A gradient op (``gradients/``) takes its forward op's
    group's backward group (:data:`BACKWARD_OF`), or else that of its
    first input that has one (the sums of several gradients), or
    ``other``. Outside both: ``summaries`` (summary ops and the
    per-variable norms only they read, ``global_norm*/``) and
    ``optimizer + clipping`` (Adagrad, the global norm's clipping, the
    deduplication of the sparse gradients' rows).
    """
    groups = {}
    state = "char-CNN + projection forward"
    backward = set(BACKWARD_OF.values())
    for name, op_type, inputs in ops:
        if GRADIENTS.match(name):
            group = BACKWARD_OF.get(groups.get(_forward_op(name) or ""))
            if group is None:
                group = next((groups[i] for i in inputs
                              if groups.get(i) in backward), "other")
        elif name.startswith("lm/"):
            if re.match(r"lm/(sampled_softmax_loss|softmax)", name):
                state = "sampled softmax"
            elif re.match(r"lm/(RNN_\d|MultiRNNCellZeroState)", name):
                if state != "sampled softmax":
                    state = "LSTM forward"
            elif name.startswith("lm/CNN_high_"):
                if state == "char-CNN + projection forward":
                    state = "highway forward"
            elif state == "highway forward" and any(
                    i.startswith("lm/CNN_proj/") for i in inputs):
                state = "char-CNN + projection forward"
            group = state
        elif op_type.endswith("Summary") or re.match(
                r"global_norm(_\d+)?/", name):
            group = "summaries"
        else:
            group = "optimizer + clipping"
        groups[name] = group
    return groups


def runtime_group(groups: dict):
    """``group(scope)`` for the node names a profile records.

    TensorFlow's graph optimizer renames some nodes before they run (a
    fused op keeps one of its ops' names; a rewritten one gets its
    pass's name as a scope or a prefix): a name not in ``groups`` is
    looked up again without those parts, then by its longest scope that
    is some ops' scope, the group of most of them, else ``other``."""
    by_scope = collections.defaultdict(collections.Counter)
    for name, group in groups.items():
        parts = name.split("/")
        for n in range(1, len(parts)):
            by_scope["/".join(parts[:n])][group] += 1

    def group(scope: str) -> str:
        if scope in groups:
            return groups[scope]
        parts = [re.sub(r"^[A-Za-z]+(Rewrite|Preserving|Optimizer)_", "", p)
                 for p in scope.split("/")
                 if not re.search(r"Optimizer$|Folding$|^_", p)]
        name = "/".join(parts)
        if name in groups:
            return groups[name]
        forward = _forward_op(name) if GRADIENTS.match(name) else None
        if forward is not None and forward in groups:
            return BACKWARD_OF.get(groups[forward], "other")
        for n in range(len(parts) - 1, 0, -1):
            counts = by_scope.get("/".join(parts[:n]))
            if counts:
                return counts.most_common(1)[0][0]
        return "other"

    return group


def profile_bilm_tf(workdir: str, args) -> dict:
    """In a fresh process with :data:`BILM_TF_ENV`: bilm-tf's ``train()``
    unchanged, profiled as the module docstring says."""
    import numpy as np
    # before the shim points "tensorflow" at tf.compat.v1: the v2
    # profiler's API, and the protocol buffer read_xspace imports
    import tensorflow as tf2
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: F401

    v1, training, data_module = import_bilm_tf(args.bilm_tf_dir)
    first, last = args.skip + args.steps, args.skip + 2 * args.steps
    logdir = os.path.join(workdir, "bilm_tf_profile")
    stamps = []

    def on_batch(i):
        # a request for batch i comes after batch i - 1's session run
        if i == first:
            tf2.profiler.experimental.start(logdir)
        stamps.append(time.perf_counter())
        if i == last:
            tf2.profiler.experimental.stop()

    train_bilm_tf(training, data_module, workdir, last + 1, on_batch)
    groups = bilm_tf_groups(
        (op.name, op.type, [t.op.name for t in op.inputs])
        for op in v1.get_default_graph().get_operations())
    seconds, by_type, spans = op_seconds(read_xspace(logdir),
                                         runtime_group(groups))
    from tensorflow.python.util import _pywrap_util_port

    return dict(
        side="bilm-tf",
        groups=group_entries(seconds, by_type, args.steps),
        steps=args.steps, skipped=args.skip,
        step_s=round(float(np.median(np.diff(stamps[args.skip:first + 1]))),
                     4),
        step_s_profiled=round((stamps[last] - stamps[first]) / args.steps,
                              4),
        **busy_figures(spans, args.steps),
        graph_ops=len(groups),
        # as TensorFlow read them; 0: its own default
        threads=[int(os.environ.get(v) or 0) for v in THREAD_VARIABLES],
        onednn=bool(_pywrap_util_port.IsMklEnabled()),
        tensorflow=v1.VERSION,
        load_avg_1min=os.getloadavg()[0],
    )


# ---------------------------------------------------------------- ours
def profile_ours(args) -> dict:
    """Our training step (train_throughput.py's fast path), profiled."""
    import train_throughput as tt  # first: bilm_keras before TensorFlow

    import tensorflow as tf

    from bilm_keras._utils.cpu_settings import classify, tensorflow_onednn
    from bilm_keras._utils.fast_precision import cpu_flags
    from bilm_keras.options import BiLMOptions
    from bilm_keras.training.threads import configure_training_threads

    c = tt.config(args.quick)
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
        space = read_xspace(logdir)
    n = 512 if args.quick else 2048
    peak = common.matmul_gflops(n, n, n)
    seconds, by_type, spans = op_seconds(space, group_of)
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
    total = sum(seconds.values())
    groups = group_entries(seconds, by_type, args.steps)
    for group, s in seconds.items():
        base = group.removesuffix(" forward").removesuffix(" backward")
        entry = groups[group]
        if base in flops:
            # forward 1x, backward 2x the forward FLOPs
            f = flops[base] * (2 if group.endswith("backward") else 1)
            wall = step_s * s / total
            entry["gflop_per_step"] = round(f / 1e9, 3)
            entry["fraction_of_peak"] = round(f / wall / 1e9 / peak, 3)
    all_flops = 3 * sum(flops.values())
    return dict(
        side="ours",
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
        **busy_figures(spans, args.steps),
        threads=threads,
        onednn=tensorflow_onednn(),
        cpu_class=classify(cpu_flags()),
        quick=args.quick,
        load_avg_1min=os.getloadavg()[0],
    )


# ---------------------------------------------------------------- both
def table(ours: dict, theirs: dict) -> str:
    """Both sides' seconds per step and shares by group, as Markdown."""
    lines = ["| group | ours s/step | ours share | bilm-tf s/step "
             "| bilm-tf share | bilm-tf / ours |",
             "|---|---|---|---|---|---|"]

    def cell(side, group):
        entry = side["groups"].get(group)
        return (entry["seconds_per_step"], entry["share"]) if entry \
            else (0.0, 0.0)

    for group in TABLE_GROUPS:
        (s_ours, f_ours), (s_theirs, f_theirs) = (cell(ours, group),
                                                  cell(theirs, group))
        if not s_ours and not s_theirs:
            continue
        ratio = f"{s_theirs / s_ours:.2f}" if s_ours else "—"
        lines.append(f"| {group} | {s_ours:.4f} | {f_ours:.0%} "
                     f"| {s_theirs:.4f} | {f_theirs:.0%} | {ratio} |")
    totals = [sum(g["seconds_per_step"] for g in side["groups"].values())
              for side in (ours, theirs)]
    lines.append(f"| op time, all groups | {totals[0]:.4f} | 100% "
                 f"| {totals[1]:.4f} | 100% | {totals[1] / totals[0]:.2f} |")
    lines.append(f"| step (wall, unprofiled) | {ours['step_s']:.4f} | "
                 f"| {theirs['step_s']:.4f} | "
                 f"| {theirs['step_s'] / ours['step_s']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--quick", action="store_true",
                        help="tiny model (CI smoke run; asserts nothing)")
    parser.add_argument("--step_products", action="store_true",
                        help="only the recurrence's per-step products, "
                             "both layouts")
    parser.add_argument("--bilm_tf_dir", default=None,
                        help="a checkout of allenai/bilm-tf: profile its "
                             "train() too, in a child process")
    parser.add_argument("--skip", type=int, default=3,
                        help="bilm-tf's first steps left out (warm-up)")
    parser.add_argument("--bilm_tf_own_threads", action="store_true",
                        help="bilm-tf with TensorFlow's own thread pools "
                             "(default: ours)")
    parser.add_argument("--_bilm_tf", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bilm_tf_dir is not None:
        try:
            args.bilm_tf_dir = check_bilm_tf_dir(args.bilm_tf_dir)
        except ValueError as e:
            parser.error(str(e))
    if args._bilm_tf:
        print(json.dumps(profile_bilm_tf(args._bilm_tf, args)))
        return
    if args.step_products:
        import train_throughput as tt  # first: bilm_keras's settings

        c = tt.config(args.quick)
        # TensorFlow's pools, as its figures were taken
        print(json.dumps(step_products(c, reps=5 if args.quick else 200,
                                       rounds=1 if args.quick else 5)))
        return
    if args.bilm_tf_dir is None:
        print(json.dumps(profile_ours(args)))
        return
    # importing bilm_keras may set this CPU class's oneDNN choice in this
    # process's environment: bilm-tf's child runs with the caller's
    # setting, or else TensorFlow's own
    given_onednn = os.environ.get(ONEDNN_VARIABLE)
    from bilm_keras.training.threads import (
        available_cores,
        cpu_training_threads,
    )
    from train_throughput import config, options_dict, write_corpus

    if given_onednn is None:
        os.environ.pop(ONEDNN_VARIABLE, None)
    env = dict(BILM_TF_ENV)
    if not args.bilm_tf_own_threads and not any(
            os.environ.get(v) for v in THREAD_VARIABLES):
        env.update(zip(THREAD_VARIABLES, map(str, cpu_training_threads(
            available_cores()))))
    with tempfile.TemporaryDirectory() as workdir:
        c = config(args.quick)
        write_corpus(workdir, c["vocab"], 3000)
        with open(os.path.join(workdir, "options.json"), "w") as f:
            json.dump(options_dict(c), f)
        theirs = common.run_json_child(
            [os.path.abspath(__file__), "--_bilm_tf", workdir,
             "--bilm_tf_dir", args.bilm_tf_dir, "--steps", str(args.steps),
             "--skip", str(args.skip)], env)
    ours = profile_ours(args)
    print(f"{common.cpu_model()} (CPU class {ours['cpu_class']}), "
          f"{common.utc_now()}, load {os.getloadavg()[0]:.2f}; oneDNN "
          f"ours {ours['onednn']}, bilm-tf {theirs['onednn']}; thread pools "
          f"ours {ours['threads']}, bilm-tf {theirs['threads']}")
    print(table(ours, theirs))
    print(json.dumps(theirs))
    print(json.dumps(ours))


if __name__ == "__main__":
    main()
