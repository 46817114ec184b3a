"""Embedding throughput of ``BidirectionalLanguageModel.embed_sentences``.

Measures, on random weights of the published model's size
(``elmo_2x4096_512_2048cnn_2xhighway``), how many real tokens per second
(no padding, no ``<S>``/``</S>``) the bulk embedding path produces for a
deterministic corpus of 256 sentences of 5-40 tokens, all three layers,
stateless, in the order given, with ``embed_sentences``' default call (no
``batch_size``: the embedder's compute batches; ``--batch_size N`` passes
one). Prints ONE JSON line.

Usage::

    python bench/embed_throughput.py                 # full size, oneDNN default
    python bench/embed_throughput.py --baseline      # + padded, given order
    python bench/embed_throughput.py --onednn both   # oneDNN off vs on
    python bench/embed_throughput.py --levers        # + single pieces
    python bench/embed_throughput.py --as_user --rounds 3  # a user's peak RSS
    python bench/embed_throughput.py --quick         # tiny model (CI smoke)

How it measures:

* The weights are written by a separate process (a randomly initialised
  :class:`~bilm_keras.BiLMBackbone` saved with
  :func:`~bilm_keras.weights.save_bilm_tf_hdf5`: ``common.write_model``),
  so the measuring process loads them through the real loader and its
  peak RSS is its own.
* ``TF_ENABLE_ONEDNN_OPTS`` is read when TensorFlow is imported, so each
  setting runs in its own process (``--onednn both`` runs two).
* start-up = ``BidirectionalLanguageModel(options, weights)`` + the first
  32 sentences (the TensorFlow import is reported separately).
* ``tokens_per_s`` is the median over ``--passes`` timed passes after one
  warm-up pass; ``peak_rss_mb`` is the process's peak after the fast
  passes (before the baseline and the matmul peaks run).
* GFLOP/s: ``gflops_nominal`` = tokens/s x the full per-token cost
  (char-CNN + highway + projection + all LSTMs, as if every token were
  computed once); ``gflops_executed`` counts what the path really computes
  (boundaries and padding included; the char-CNN once per unique token for
  the fast path). Each is also given as a fraction of the matmul peaks
  measured in the same process (``common.matmul_gflops``): a 4096x4096
  float32 matmul and the recurrence's per-step shape (32 x 512) .
  (512 x 16384).
* ``--levers`` times single pieces, alternating (XLA on the char-CNN, the
  LSTMs' settings) and reports the resident memory one batch of the
  LSTMs takes above what the process held before it
  (``lstms_batch_27_rss_peak_above_mib``, sampled every 2 ms:
  ``common.RSSPeak``).

The machine may be shared: figures are medians, and the baseline runs
interleaved with the fast path so that their ratio sees the same load.
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


# ------------------------------------------------------------ FLOP counts
def flop_counts(options: dict) -> dict:
    """FLOPs (multiply-add = 2) of one token through each part."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    c, e = cnn["max_characters_per_token"], cnn["embedding"]["dim"]
    f = sum(n for _, n in cnn["filters"])
    p, u = lstm["projection_dim"], lstm["dim"]
    conv = sum(2 * w * e * n * (c - w + 1) for w, n in cnn["filters"])
    highway = cnn["n_highway"] * 2 * (2 * f * f)
    proj = 2 * f * p if f != p else 0
    n_dir = 2 if options.get("bidirectional", True) else 1
    per_layer = 2 * p * 4 * u + 2 * p * 4 * u + 2 * u * p
    lstms = n_dir * lstm["n_layers"] * per_layer
    return dict(char_cnn=conv, highway=highway, projection=proj,
                token_embedding=conv + highway + proj, lstm=lstms,
                total=conv + highway + proj + lstms)


# ------------------------------------------------------------ matmul peaks
def matmul_peaks(quick: bool) -> dict:
    """GFLOP/s of a square matmul and of the recurrence's per-step shape
    (:func:`common.matmul_gflops`)."""
    shapes = {"square": (512, 512, 512) if quick else (4096, 4096, 4096),
              "step": (32, 512, 16384)}
    return {f"matmul_{name}_{m}x{k}x{n}_gflops": common.matmul_gflops(
        m, k, n, repeats=3 if quick else 5)
        for name, (m, k, n) in shapes.items()}


def measure_levers(model, corpus, batch_size, reps=3) -> dict:
    """XLA (``jit_compile=True``) against plain graphs, alternating runs.

    (The inference LSTMs drop ended rows step by step, shapes XLA cannot
    compile, so only the char-CNN is timed both ways.)

    * char-CNN + highway of 1024 distinct tokens (the token table);
    * the LSTMs of one sorted batch (``batch_size`` x 27 positions).
    """
    import numpy as np
    import tensorflow as tf

    from bilm_keras import Batcher, BulkEmbedder

    backbone = model.backbone
    words = list(dict.fromkeys(w for s in corpus for w in s))[:1024]
    ids = Batcher(None, backbone.max_characters_per_token).batch_sentences(
        [words])[0][:, None]  # (N + 2, 1, C)
    ids = tf.constant(ids[:256], tf.int32)
    # the graphs of the fast passes (model.embed_sentences), already traced
    graphs = model.bulk_embedder.graphs
    plain = graphs["tokens"]
    xla = tf.function(backbone.embed_tokens, jit_compile=True)
    encode = graphs["encode"]

    table = plain(ids)[:, 0]
    rng = np.random.default_rng(0)
    positions = tf.constant(
        rng.integers(0, table.shape[0], (batch_size, 27)), tf.int32)
    lengths = tf.fill([batch_size], 27)
    # the other settings, each an embedder of its own on the same weights
    encode_concurrent = BulkEmbedder(
        backbone, concurrent_directions=True).graphs["encode"]
    encode_concurrent(table, positions, lengths)

    def run(fn):
        return lambda: [h.numpy() for layers in fn(table, positions,
                                                   lengths).values()
                        for h in layers]

    cases = {
        "char_cnn_256_tokens_s": lambda: plain(ids).numpy(),
        "char_cnn_256_tokens_xla_s": lambda: xla(ids).numpy(),
        "lstms_batch_27_s": run(encode),
        "lstms_batch_27_directions_concurrent_s": run(encode_concurrent),
    }
    # the resident memory one batch takes above what is held before it
    # (sampled: TensorFlow's CPU allocator keeps no statistics in some
    # builds), measured before anything else runs the cases
    rss_peaks = {}
    for key in ("lstms_batch_27_s",):
        with common.RSSPeak() as rss:
            cases[key]()
        rss_peaks[key.replace("_s", "_rss_peak_above_mib")] = (
            rss.above_start_mib)
    times = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # trace / compile
    for _ in range(reps):
        for key, fn in cases.items():
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update(rss_peaks)
    out["char_cnn_xla_max_abs_diff"] = float(
        np.abs(plain(ids).numpy() - xla(ids).numpy()).max())
    return out


def measure_as_user(workdir: str, args) -> dict:
    """Peak RSS of the bulk path as a user's program runs it.

    Nothing but the public API, in a fresh process: import, construct the
    model, then ``--passes`` calls of ``embed_sentences`` on the corpus in
    a loop, each pass's results dropped before the next pass starts (so
    one pass's results are alive at a time). No benchmark-only set-up: no
    warm-up batch, no ``return_freed_memory()`` call of its own (the
    library's bulk path fixes glibc's threshold itself, unless
    ``--glibc_default``). ``peak_rss_mib`` is ``ru_maxrss`` in MiB.
    """
    corpus = make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(len(s) for s in corpus)
    t0 = time.perf_counter()
    from bilm_keras import BidirectionalLanguageModel
    from bilm_keras.embedding import memory

    if args.glibc_default:  # the library as it was before it set it
        memory.keep_glibc_defaults()
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"),
    )
    load_s = time.perf_counter() - t0
    times = common.time_passes(
        lambda: common.embed_corpus(model, corpus, args.batch_size),
        args.passes)
    peak_rss_mib = common.peak_rss_mib()
    import tensorflow as tf

    return dict(
        as_user=True,
        peak_rss_mib=peak_rss_mib,
        passes=args.passes,
        pass_s_all=[round(t, 3) for t in times],
        tokens_per_s_median=n_tokens / statistics.median(times),
        import_s=import_s,
        load_s=load_s,
        corpus=dict(sentences=len(corpus), tokens=n_tokens,
                    batch_size=args.batch_size),
        # set by the library's bulk path (bilm_keras/embedding/memory.py)
        bulk_mmap_threshold_fixed=memory._bulk_setting,
        settings=dict(
            tensorflow=tf.__version__,
            cpu_count=os.cpu_count(),
            load_avg_1min=os.getloadavg()[0],
            quick=args.quick,
            MALLOC_MMAP_THRESHOLD_=os.environ.get("MALLOC_MMAP_THRESHOLD_"),
        ),
    )


def measure(workdir: str, args) -> dict:
    """Runs in a fresh process with TF_ENABLE_ONEDNN_OPTS already set."""
    t0 = time.perf_counter()
    import tensorflow as tf

    from bilm_keras.embedding import memory

    # as `bilm-keras embed` does, before the model loads; --glibc_default
    # also stops the bulk path from doing it on its first call
    if args.glibc_default:
        memory.keep_glibc_defaults()
    mmap_threshold_fixed = (not args.glibc_default) and (
        memory.return_freed_memory())

    from bilm_keras import Batcher, BidirectionalLanguageModel
    import_s = time.perf_counter() - t0

    options = json.load(open(os.path.join(workdir, "options.json")))
    corpus = make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(len(s) for s in corpus)
    n_unique = len({w for s in corpus for w in s})
    bs = args.batch_size  # None: embed_sentences' default call
    bb = bs or 32  # the padded baseline's batches
    flops = flop_counts(options)

    t0 = time.perf_counter()
    model = BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"),
    )
    model.embed_sentences(corpus[:bb], batch_size=bs)
    startup_s = time.perf_counter() - t0

    def fast_pass():
        out = model.embed_sentences(corpus, batch_size=bs)
        assert len(out) == len(corpus)

    batcher = Batcher(None, options["char_cnn"]["max_characters_per_token"])

    def baseline_pass():
        # the straightforward way: given order, padded to each batch's max
        out = []
        for i in range(0, len(corpus), bb):
            batch = corpus[i: i + bb]
            emb = model(batcher.batch_sentences(batch))["lm_embeddings"]
            emb = emb.numpy()
            out.extend(emb[k, :, : len(s)] for k, s in enumerate(batch))
        assert len(out) == len(corpus)

    fast_pass()  # warm-up (traces every shape class once)
    fast_times = []
    for _ in range(args.passes):
        t = time.perf_counter()
        fast_pass()
        fast_times.append(time.perf_counter() - t)
    peak_rss_mb = common.peak_rss_mib()

    result = {}
    if args.baseline:
        baseline_pass()  # warm-up
        base_times, ratios = [], []
        for _ in range(args.passes):
            t = time.perf_counter()
            baseline_pass()
            base_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            fast_pass()
            fast_times.append(time.perf_counter() - t)
            ratios.append(base_times[-1] / fast_times[-1])
        base_tps = n_tokens / statistics.median(base_times)
        padded = sum(
            len(corpus[i: i + bb]) * (max(len(s) for s in corpus[i: i + bb])
                                      + 2)
            for i in range(0, len(corpus), bb)
        )
        base_exec = padded * (flops["token_embedding"] + flops["lstm"])
        result["baseline"] = dict(
            tokens_per_s=base_tps,
            pass_s=statistics.median(base_times),
            best_tokens_per_s=n_tokens / min(base_times),
            gflops_nominal=base_tps * flops["total"] / 1e9,
            gflops_executed=base_exec / statistics.median(base_times) / 1e9,
            padded_positions=padded,
        )
        result["speedup_vs_baseline_median"] = statistics.median(ratios)

    if args.levers:
        result["levers"] = measure_levers(model, corpus, bb)

    fast_s = statistics.median(fast_times)
    tps = n_tokens / fast_s
    executed = ((n_tokens + 2 * len(corpus)) * flops["lstm"]
                + (n_unique + 2) * flops["token_embedding"])
    peaks = matmul_peaks(args.quick)
    fast = dict(
        tokens_per_s=tps,
        pass_s=fast_s,
        best_tokens_per_s=n_tokens / min(fast_times),
        pass_s_all=[round(t, 3) for t in fast_times],
        gflops_nominal=tps * flops["total"] / 1e9,
        gflops_executed=executed / fast_s / 1e9,
    )
    for mode in [fast] + ([result["baseline"]] if args.baseline else []):
        for key, peak in peaks.items():
            tag = key.split("_")[1]
            mode[f"fraction_of_{tag}_peak_nominal"] = (
                mode["gflops_nominal"] / peak)
            mode[f"fraction_of_{tag}_peak_executed"] = (
                mode["gflops_executed"] / peak)
    return dict(
        fast=fast,
        **result,
        peak_rss_mb=peak_rss_mb,
        startup_s=startup_s,
        tf_import_s=import_s,
        **peaks,
        corpus=dict(sentences=len(corpus), tokens=n_tokens,
                    unique_tokens=n_unique, batch_size=bs,
                    baseline_batch_size=bb),
        gflop_per_token={k: v / 1e9 for k, v in flops.items()},
        settings=dict(
            TF_ENABLE_ONEDNN_OPTS=os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
            tensorflow=tf.__version__,
            intra_op_threads=(
                tf.config.threading.get_intra_op_parallelism_threads()),
            cpu_count=os.cpu_count(),
            load_avg_1min=os.getloadavg()[0],
            quick=args.quick,
            passes=args.passes,
            mmap_threshold_fixed=mmap_threshold_fixed,
        ),
    )


# ------------------------------------------------------------------ main
def _child(argv, env_updates) -> dict:
    """This script in a fresh process: its JSON line."""
    return common.run_json_child([os.path.abspath(__file__)] + argv,
                                 dict(common.TF_CHILD_ENV, **env_updates))


def _merge_rounds(rounds: list) -> dict:
    """One report from several processes: medians over all their passes."""
    if len(rounds) == 1:
        return rounds[0]
    out = dict(rounds[0])
    for mode in ("fast", "baseline"):
        if mode not in out:
            continue
        merged = dict(out[mode])
        for key in merged:
            values = [r[mode][key] for r in rounds]
            if key == "pass_s_all":
                merged[key] = [t for v in values for t in v]
            elif key == "best_tokens_per_s":
                merged[key] = max(values)
            elif isinstance(merged[key], (int, float)):
                merged[key] = statistics.median(values)
        out[mode] = merged
    peaks = [key for key in out if key.startswith("matmul_")]
    for key in ["peak_rss_mb", "startup_s", "tf_import_s",
                "speedup_vs_baseline_median"] + peaks:
        if key in out:
            out[key] = statistics.median(r[key] for r in rounds)
    out["rounds"] = len(rounds)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and corpus; asserts nothing")
    parser.add_argument("--baseline", action="store_true",
                        help="also time the padded, given-order __call__ loop")
    parser.add_argument("--onednn", choices=["0", "1", "both", "default"],
                        default="default",
                        help="TF_ENABLE_ONEDNN_OPTS for the measuring "
                             "process(es); default: leave the environment")
    parser.add_argument("--passes", type=int, default=None,
                        help="timed passes per process (after a warm-up)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --onednn both: alternating processes "
                             "per setting; with --as_user: processes "
                             "(median peak)")
    parser.add_argument("--batch_size", type=int, default=None,
                        help="embed_sentences' batch_size (default: none "
                             "given, the embedder's own compute batches; "
                             "the padded baseline then uses 32)")
    parser.add_argument("--levers", action="store_true",
                        help="also time XLA (jit_compile) on the char-CNN "
                             "against plain graphs, and the LSTMs' settings")
    parser.add_argument("--n_sentences", type=int, default=None)
    parser.add_argument("--glibc_default", action="store_true",
                        help="leave glibc's malloc as it is (the bulk "
                             "embedding path fixes its mmap threshold: "
                             "bilm_keras/embedding/memory.py)")
    parser.add_argument("--as_user", action="store_true",
                        help="only the peak RSS of a user's program: "
                             "import, load, --passes passes (default 3) "
                             "of embed_sentences, nothing else")
    common.add_model_workdir_arguments(parser)
    args = parser.parse_args(argv)
    if args.passes is None:
        args.passes = 3 if args.as_user or args._as_user else (
            2 if args.quick else 5)
    if args.n_sentences is None:
        args.n_sentences = 64 if args.quick else 256

    if common.answer_child_role(args, measure, measure_as_user):
        return

    quick = ["--quick"] if args.quick else []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        common.write_bench_model(workdir, args.quick)
        if args.as_user:
            child = ["--_as_user", workdir, "--n_sentences",
                     str(args.n_sentences), "--passes", str(args.passes)]
            if args.batch_size is not None:
                child += ["--batch_size", str(args.batch_size)]
            if args.glibc_default:
                child.append("--glibc_default")
            rounds = [_child(child + quick, {})
                      for _ in range(args.rounds)]
            out = dict(rounds[0])
            if len(rounds) > 1:  # one process per round: median of peaks
                out["peak_rss_mib_all"] = [r["peak_rss_mib"] for r in rounds]
                out["peak_rss_mib"] = statistics.median(
                    out["peak_rss_mib_all"])
                out["tokens_per_s_median"] = statistics.median(
                    r["tokens_per_s_median"] for r in rounds)
                out["rounds"] = len(rounds)
            print(json.dumps(out))
            return
        settings = {"0": ["0"], "1": ["1"], "both": ["0", "1"],
                    "default": [None]}[args.onednn]
        child = ["--_measure", workdir,
                 "--n_sentences", str(args.n_sentences)] + quick
        if args.batch_size is not None:
            child += ["--batch_size", str(args.batch_size)]
        if args.baseline:
            child.append("--baseline")
        if args.levers:
            child.append("--levers")
        if args.glibc_default:
            child.append("--glibc_default")
        runs = {}
        # with several settings, rounds alternate between them so that each
        # sees the same load of a shared machine
        for _ in range(args.rounds if len(settings) > 1 else 1):
            for value in settings:
                env = {} if value is None else {"TF_ENABLE_ONEDNN_OPTS": value}
                passes = ["--passes", str(args.passes)]
                out = _child(child + passes, env)
                runs.setdefault(f"onednn={value or 'env'}", []).append(out)
    runs = {key: _merge_rounds(rounds) for key, rounds in runs.items()}
    if len(runs) == 1:
        print(json.dumps(next(iter(runs.values()))))
    else:
        print(json.dumps(runs))


if __name__ == "__main__":
    main()
