"""The bulk embedder's compute-batch levers, side by side in one process.

Each setting is a :class:`~bilm_keras.BulkEmbedder` on the same weights
(the published model's size, random, loaded through the real loader) and
the corpus of ``embed_throughput.py`` (256 sentences, 6,297 tokens); the
settings' passes alternate, round after round, with a 4096x4096 float32
matmul before each round, so every ratio sees the same load of a shared
machine. Prints ONE JSON line: per setting the median tokens/s, the median
of its per-round ratio to the first setting, and the median of its
per-round nominal GFLOP/s as a fraction of that round's square-matmul
peak (nominal: the full per-token cost of ``embed_throughput.py``).
``--steps`` instead times a full-size LSTM step's products in both
layouts (B rows on the left of the kernel, or the transposed kernel on
the left of B columns) for B in 16..256, alternating, as fractions of the
square peak.

``--quick`` runs the benchmarks' tiny model (``common.QUICK_OPTIONS``),
the first two settings unless ``--settings`` names others, one round by
default and a 1024x1024 peak: a smoke run.

Usage::

    python bench/embed_compute_batches.py --rounds 3
    python bench/embed_compute_batches.py --steps --rounds 5
    python bench/embed_compute_batches.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import common
from common import make_corpus
from embed_throughput import flop_counts

#: (positions, sentences) per compute batch, each a setting "budgetPxS"
BUDGETS = [(1024, 64), (2048, 128), (3072, 128), (4096, 128), (4096, 256),
           (6144, 256), (8192, 128), (8192, 192), (8192, 256),
           (16384, 512)]

#: name -> (BulkEmbedder keyword arguments, embed_sentences batch_size)
SETTINGS = {
    "batch32": ({}, 32),
    "budget (default)": ({}, None),
    **{f"budget{tokens}x{sentences}": (
        dict(compute_tokens=tokens, compute_sentences=sentences), None)
       for tokens, sentences in BUDGETS},
    "directions_concurrent": (dict(concurrent_directions=True), None),
}


def _square_peak(size: int = 4096) -> float:
    """size: int. This round's square-matmul peak
    (``common.matmul_gflops``), 4096 x 4096 unless a smoke run asks for
    less."""
    return common.matmul_gflops(size, size, size, repeats=2)


def measure_steps(rounds: int) -> dict:
    """A step's products of a full-size LSTM layer (input and recurrent
    parts, 1024 x 16384, and the projection, 4096 x 512), in both layouts,
    for batches of B rows: ``[x, h] @ kernel`` (B rows on the left, the
    layout before 2026-11-24) and ``kernel_t @ [x; h]`` (the weights on the
    left, B columns: :func:`~bilm_keras.layers.recurrence.
    run_inference_columns`), as fractions of the square peak of the
    same round."""
    import tensorflow as tf

    @tf.function(reduce_retracing=True)
    def rows_right(x, kernel, projection, n):  # x (B, 1024)
        for _ in tf.range(n):
            m = tf.matmul(x, kernel)[:, :4096]
            x = tf.concat([x[:, :512], tf.matmul(m, projection)], 1) * 1e-3
        return x

    @tf.function(reduce_retracing=True)
    def weights_left(x, kernel_t, projection_t, n):  # x (1024, B)
        for _ in tf.range(n):
            m = tf.matmul(kernel_t, x)[:4096]
            x = tf.concat([x[:512], tf.matmul(projection_t, m)], 0) * 1e-3
        return x

    kernel = tf.random.normal((1024, 16384))
    projection = tf.random.normal((4096, 512))
    kernel_t, projection_t = tf.transpose(kernel), tf.transpose(projection)
    sizes = [16, 32, 48, 64, 96, 128, 256]
    layouts = {
        "rows_right": (rows_right, kernel, projection,
                       {b: tf.random.normal((b, 1024)) for b in sizes}),
        "weights_left": (weights_left, kernel_t, projection_t,
                         {b: tf.random.normal((1024, b)) for b in sizes}),
    }
    for fn, w, p, xs in layouts.values():
        for b in sizes:
            fn(xs[b], w, p, tf.constant(1)).numpy()
    fractions = {name: {b: [] for b in sizes} for name in layouts}
    flops_per_row = 2 * (1024 * 16384 + 4096 * 512)
    for _ in range(rounds):
        peak = _square_peak()
        for b in sizes:
            n = max(1, int(2e9 / (b * flops_per_row)))
            for name, (fn, w, p, xs) in layouts.items():
                t = time.perf_counter()
                fn(xs[b], w, p, tf.constant(n)).numpy()
                gflops = n * b * flops_per_row / (
                    time.perf_counter() - t) / 1e9
                fractions[name][b].append(gflops / peak)
    return dict(step_products_fraction_of_square_peak={
        name: {b: round(statistics.median(v), 3) for b, v in by_b.items()}
        for name, by_b in fractions.items()},
        load_avg_1min=os.getloadavg()[0])


def measure_settings(workdir: str, rounds: int, names,
                     peak_size: int = 4096) -> dict:
    import tensorflow as tf

    from bilm_keras import BidirectionalLanguageModel, BulkEmbedder

    options = json.load(open(os.path.join(workdir, "options.json")))
    per_token = flop_counts(options)["total"]
    corpus = make_corpus()
    n_tokens = sum(map(len, corpus))
    model = BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"))
    embedders = {name: (BulkEmbedder(model.backbone, **SETTINGS[name][0]),
                        SETTINGS[name][1]) for name in names}
    for embedder, batch_size in embedders.values():  # traces, compiles
        embedder.embed_sentences(corpus, batch_size)
    times = {name: [] for name in names}
    fractions = {name: [] for name in names}
    loads = []
    for _ in range(rounds):
        peak = _square_peak(peak_size)
        loads.append(os.getloadavg()[0])
        for name, (embedder, batch_size) in embedders.items():
            t = time.perf_counter()
            out = embedder.embed_sentences(corpus, batch_size)
            times[name].append(time.perf_counter() - t)
            del out
            fractions[name].append(
                n_tokens * per_token / times[name][-1] / 1e9 / peak)
    first = names[0]
    return dict(
        settings={
            name: dict(
                tokens_per_s=round(n_tokens / statistics.median(times[name])),
                speedup_vs_first=round(statistics.median(
                    t0 / t for t0, t in zip(times[first], times[name])), 3),
                fraction_of_square_peak_nominal=round(
                    statistics.median(fractions[name]), 3),
                pass_s_all=[round(t, 2) for t in times[name]],
            ) for name in names},
        rounds=rounds,
        load_avg_1min_per_round=[round(x, 2) for x in loads],
        tensorflow=tf.__version__,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=None,
                        help="default 3 (1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model, two settings (a smoke run)")
    parser.add_argument("--steps", action="store_true",
                        help="the step matmul's GFLOP/s for B in 16..512")
    parser.add_argument("--settings", nargs="+", default=None,
                        choices=list(SETTINGS),
                        help="default all (the first two with --quick)")
    parser.add_argument("--workdir", default=None,
                        help="reuse/keep options.json + weights.hdf5 here")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.settings is None:
        args.settings = list(SETTINGS)[:2] if args.quick else list(SETTINGS)
    if args.steps:
        print(json.dumps(measure_steps(args.rounds)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        common.write_bench_model(workdir, args.quick)
        report = measure_settings(workdir, args.rounds, args.settings,
                                  peak_size=1024 if args.quick else 4096)
        report["model"] = "tiny" if args.quick else "published size"
        print(json.dumps(report))


if __name__ == "__main__":
    main()
