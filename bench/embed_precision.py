"""Embedding at a reduced precision against float32: speed and distance.

On random weights of the published model's size (``--quick``: the tiny
model), in ONE process: the default call ``embed_sentences(corpus)`` at
float32 and at ``--precision`` (default bfloat16), alternating pass by
pass, with the ratio of their rates per round and its median; the
per-token cosine of the reduced-precision vectors to float32's (median,
1st percentile, worst) and their largest relative error, per layer and
for the average of the layers; the products' own rates at the model's
shapes in both dtypes (``common.matmul_gflops``); the CPU, its flags and
the load. Prints ONE JSON line.

Usage::

    python bench/embed_precision.py --rounds 5
    python bench/embed_precision.py --as_user --rounds 3   # peak RSS of a
        # user's program at bfloat16 (import, load, 3 passes), own process
    python bench/embed_precision.py --quick               # smoke check

With ``--fixtures``, instead: the distance alone on the repository's
trained fixture models (bilm-tf's and ELMoForManyLangs', converted), on
bilm-tf's fixture training text, per layer and for the average::

    python bench/embed_precision.py --fixtures

With ``--state_variants``, also what keeping the LSTM's state in float32
buys: the forward LSTMs re-run in numpy (float32 arithmetic, bfloat16
emulated by rounding) on the float32 token layer of a few sentences and
of one of about 300 tokens, as this path computes (``ours``: the
products' operands and results rounded, the state, gates and outputs
float32) and with every carried value rounded too (``all_bfloat16``: the
cell state, the gates and the outputs), each against plain float32.

Both models are the same loaded weights: a precision is a policy on the
layers (``bilm_keras.layers.precision``), the variables stay float32, so
each pass runs its own traced graph on the same variables.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import common

#: the products of one step of the published model's LSTMs at a compute
#: batch of 128 columns, the char-CNN's projection and a square product
SHAPES = {
    "lstm_step_16384x1024x128": (16384, 1024, 128),
    "lstm_projection_512x4096x128": (512, 4096, 128),
    "cnn_projection_16384x2048x512": (16384, 2048, 512),
    "square_4096": (4096, 4096, 4096),
}


def cosine_stats(reference, other) -> dict:
    """Per-token cosine of ``other`` to ``reference`` (lists of `(..., n,
    dim)` arrays, the same shapes): median, 1st percentile, worst; and the
    largest ``|other - reference| / max |reference|`` per token."""
    import numpy as np

    cosines, relative = [], []
    for a, b in zip(reference, other):
        a = a.reshape(-1, a.shape[-1]).astype(np.float64)
        b = b.reshape(-1, b.shape[-1]).astype(np.float64)
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        cosines.append((a * b).sum(1) / np.maximum(norms, 1e-30))
        relative.append(np.abs(b - a).max(1)
                        / np.maximum(np.abs(a).max(1), 1e-30))
    c, r = np.concatenate(cosines), np.concatenate(relative)
    return {"cosine_median": float(np.median(c)),
            "cosine_p1": float(np.percentile(c, 1)),
            "cosine_min": float(c.min()),
            "max_relative_error": float(r.max()),
            "tokens": int(c.size)}


def distances(f32, other) -> dict:
    """:func:`cosine_stats` per layer (``layer_0`` the token layer) and
    for the average of the layers, of ``output="all"`` results."""
    out = {f"layer_{k}": cosine_stats([a[k] for a in f32],
                                      [b[k] for b in other])
           for k in range(f32[0].shape[0])}
    out["average"] = cosine_stats([a.mean(0) for a in f32],
                                  [b.mean(0) for b in other])
    return out


def fixture_distances(precision: str) -> dict:
    """:func:`distances` of ``precision`` to float32 on the fixture
    models (trained weights, where random ones may be kinder)."""
    from bilm_keras import BidirectionalLanguageModel
    from bilm_keras.weights.manylangs_conversion import convert_manylangs

    fixtures = os.path.join(common.REPO_ROOT, "tests", "fixtures")
    with open(os.path.join(fixtures, "bilm-tf", "train", "data.txt"),
              encoding="utf-8") as f:
        corpus = [line.split() for line in f if line.strip()]
    report = {"machine": common.machine(), "precision": precision,
              "sentences": len(corpus)}
    with tempfile.TemporaryDirectory() as tmp:
        convert_manylangs(os.path.join(fixtures, "elmoformanylangs",
                                       "tiny.model"),
                          os.path.join(tmp, "manylangs"))
        models = {
            "bilm_tf": os.path.join(fixtures, "bilm-tf", "model"),
            "manylangs": os.path.join(tmp, "manylangs")}
        for name, folder in models.items():
            files = (os.path.join(folder, "options.json"),
                     os.path.join(folder, "lm_weights.hdf5"))
            f32 = BidirectionalLanguageModel(*files).embed_sentences(corpus)
            other = BidirectionalLanguageModel(
                *files, precision=precision).embed_sentences(corpus)
            report[name] = distances(f32, other)
    return report


def _bf16(x):
    """``x`` rounded to bfloat16 and back (numpy: ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def _lstm_layer(x, w, b, w_p, clip, proj_clip, variant):
    """One TF1 LSTMCell over ``x`` `(n, D)` from zero states, numpy:
    ``variant`` "float32", "ours" or "all_bfloat16" (see the docstring)."""
    import numpy as np

    def r(v, what):  # what a variant rounds
        if variant == "float32" or (variant == "ours" and what == "state"):
            return v
        return _bf16(v)

    units, dim = w_p.shape
    c, h = np.zeros(units, np.float32), np.zeros(dim, np.float32)
    w, w_p = r(w, "operand"), r(w_p, "operand")
    out = np.empty((len(x), dim), np.float32)
    for t in range(len(x)):
        z = r(r(np.concatenate([x[t], h]), "operand") @ w, "operand") + b
        i, j, f, o = np.split(z, 4)
        sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
        c = r(np.clip(sig(f + 1.0) * c + sig(i) * np.tanh(j), -clip, clip),
              "state")
        m = r(sig(o) * np.tanh(c), "state")
        h = r(np.clip(r(r(m, "operand") @ w_p, "operand"), -proj_clip,
                      proj_clip), "state")
        out[t] = h
    return out


def state_variants(embedder32, corpus, workdir) -> dict:
    """``--state_variants``: the cosine of each variant's forward LSTM
    outputs to float32's, per layer, over the short sentences and over
    the last 100 tokens of the long one."""
    import h5py

    from bilm_keras.weights.bilm_tf_names import (
        LSTM_BIAS,
        LSTM_KERNEL,
        LSTM_PROJECTION,
        lstm_hdf5_prefix,
    )

    options = json.load(open(os.path.join(workdir, "options.json")))
    lstm = options["lstm"]
    long_sentence = [w for s in corpus[6:30] for w in s][:300]
    sentences = corpus[:6] + [long_sentence]
    dim = lstm["projection_dim"]
    tokens = [a[0, :, :dim] for a in embedder32.embed_sentences(sentences)]
    with h5py.File(os.path.join(workdir, "weights.hdf5"), "r") as f:
        cells = [[f[f"{lstm_hdf5_prefix(0, k)}/{name}"][...]
                  for name in (LSTM_KERNEL, LSTM_BIAS, LSTM_PROJECTION)]
                 for k in range(lstm["n_layers"])]
    outs = {}
    for variant in ("float32", "ours", "all_bfloat16"):
        outs[variant] = []
        for x in tokens:
            layers = []
            for k, (w, b, w_p) in enumerate(cells):
                h = _lstm_layer(x, w, b, w_p, lstm["cell_clip"],
                                lstm["proj_clip"], variant)
                if k and lstm["use_skip_connections"]:
                    h = h + x
                layers.append(h)
                x = h
            outs[variant].append(layers)
    report = {}
    for variant in ("ours", "all_bfloat16"):
        for k in range(lstm["n_layers"]):
            short = cosine_stats([o[k] for o in outs["float32"][:-1]],
                                 [o[k] for o in outs[variant][:-1]])
            late = cosine_stats([outs["float32"][-1][k][-100:]],
                                [outs[variant][-1][k][-100:]])
            report[f"{variant}/layer_{k + 1}"] = {
                "short_cosine_min": short["cosine_min"],
                "short_cosine_median": short["cosine_median"],
                "long_last_100_cosine_min": late["cosine_min"],
                "long_last_100_cosine_median": late["cosine_median"]}
    report["tokens"] = {"short": sum(map(len, corpus[:6])),
                        "long": len(long_sentence)}
    return report


def load(workdir: str):
    from bilm_keras import BidirectionalLanguageModel

    return BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"))


def embedder_at(model, precision: str):
    """A bulk embedder of ``model``'s backbone whose graphs trace at
    ``precision`` (traced now, on a first call by the caller)."""
    from bilm_keras.embedding.bulk_embedder import BulkEmbedder
    from bilm_keras.layers.precision import set_precision

    set_precision(model.backbone, precision)
    return BulkEmbedder(model.backbone)


def measure(workdir: str, args) -> dict:
    import tensorflow as tf  # noqa: F401  (imported before the timing)

    from bilm_keras._utils.fast_precision import cpu_flags
    from bilm_keras.layers.precision import compute_dtype_of

    dtype = compute_dtype_of(args.precision)
    corpus = common.make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(len(s) for s in corpus)
    model = load(workdir)
    embedders = {}
    for precision in ("float32", args.precision):
        embedders[precision] = embedder_at(model, precision)
        embedders[precision].embed_sentences(corpus[:32])  # trace, warm up
    f32 = embedders["float32"].embed_sentences(corpus)
    low = embedders[args.precision].embed_sentences(corpus)
    rates = {p: [] for p in embedders}
    for _ in range(args.rounds):
        for precision, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed_sentences(corpus)
            rates[precision].append(n_tokens / (time.perf_counter() - start))
    flags = cpu_flags()
    products = {}
    if not args.quick:
        for name, (m, k, n) in SHAPES.items():
            rate = {d: common.matmul_gflops(m, k, n, dtype=d)
                    for d in ("float32", dtype)}
            products[name] = {f"{d}_gflops": round(v, 1)
                              for d, v in rate.items()}
            products[name]["ratio"] = round(rate[dtype] / rate["float32"], 2)
    return {
        "machine": common.machine(),
        "cpu_flags": sorted(f for f in flags
                            if f.startswith(("amx", "avx512_bf16",
                                             "avx512_fp16"))),
        "precision": args.precision,
        "corpus": {"sentences": len(corpus), "tokens": n_tokens},
        "rounds": args.rounds,
        "tokens_per_s": {p: round(statistics.median(v), 1)
                         for p, v in rates.items()},
        "speedup_median": round(common.median_ratio(
            rates[args.precision], rates["float32"]), 3),
        "speedup_per_round": [round(a / b, 3) for a, b in
                              zip(rates[args.precision], rates["float32"])],
        "distance_to_float32": distances(f32, low),
        "products": products,
        "peak_rss_mib": round(common.peak_rss_mib(), 1),
        "state_variants": (state_variants(embedders["float32"], corpus,
                                          workdir)
                           if args.state_variants else None),
    }


def measure_as_user(workdir: str, args) -> dict:
    """A user's program at ``--precision``: import, load, 3 passes; its
    peak RSS (own process)."""
    t0 = time.perf_counter()
    from bilm_keras.layers.precision import set_precision

    corpus = common.make_corpus(n_sentences=args.n_sentences)
    model = load(workdir)
    set_precision(model.backbone, args.precision)
    for _ in range(3):
        model.embed_sentences(corpus)
    return {"precision": args.precision,
            "peak_rss_mib": round(common.peak_rss_mib(), 1),
            "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and corpus; asserts nothing")
    parser.add_argument("--precision", default="bfloat16",
                        help="the precision against float32 (default "
                             "bfloat16)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed passes of each precision, alternating "
                             "(default 5; --quick 1); with --as_user: "
                             "processes (median peak)")
    parser.add_argument("--n_sentences", type=int, default=None)
    parser.add_argument("--as_user", action="store_true",
                        help="only the peak RSS of a user's program at "
                             "--precision, each round its own process")
    parser.add_argument("--state_variants", action="store_true",
                        help="also the LSTM state kept in float32 against "
                             "in bfloat16 (numpy, forward LSTMs)")
    parser.add_argument("--fixtures", action="store_true",
                        help="only the distance, on the trained fixture "
                             "models")
    common.add_model_workdir_arguments(parser)
    args = parser.parse_args(argv)
    if args.fixtures:
        print(json.dumps(fixture_distances(args.precision)))
        return
    if args.rounds is None:
        args.rounds = 1 if args.quick else (3 if args.as_user else 5)
    if args.n_sentences is None:
        args.n_sentences = 24 if args.quick else 256
    if common.answer_child_role(args, measure, measure_as_user):
        return

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        common.write_bench_model(workdir, args.quick)
        passed = ["--precision", args.precision,
                  "--n_sentences", str(args.n_sentences),
                  "--rounds", str(args.rounds)] + (
            ["--quick"] if args.quick else []) + (
            ["--state_variants"] if args.state_variants else [])
        script = os.path.abspath(__file__)
        if args.as_user:
            runs = [common.run_json_child(
                [script, "--_as_user", workdir] + passed,
                common.TF_CHILD_ENV) for _ in range(args.rounds)]
            report = {"machine": common.machine(),
                      "precision": args.precision,
                      "peak_rss_mib_median": statistics.median(
                          r["peak_rss_mib"] for r in runs),
                      "peak_rss_mib_all": [r["peak_rss_mib"] for r in runs]}
        else:
            report = common.run_json_child(
                [script, "--_measure", workdir] + passed,
                common.TF_CHILD_ENV)
        print(json.dumps(report))


if __name__ == "__main__":
    main()
