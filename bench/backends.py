"""ELMoEmbedding under each Keras backend, as ratios to TensorFlow.

The same layer, the same ids and the same weights (random, the published
model's shapes; ``--quick``: the tiny model) under ``KERAS_BACKEND``
``tensorflow``, ``jax`` and ``torch``. Each backend runs in its own child
process (Keras picks its backend once, at import), and the children run
alternately round after round, so the machine's load of the moment hits
every backend alike. In each child, after an untimed warm-up pass (JAX
compiles one program per batch shape, TensorFlow traces one graph):

* ``embed``: ``predict_on_batch`` of a model of the layer with
  ``output="layers"`` over the corpus' ids, sorted by length, batches of
  ``--batch_size`` sentences padded to a multiple of 8 tokens (fewer
  shapes to compile); tokens/s counts the real tokens.
* ``fit_mix``: ``train_on_batch`` of a tagger (the layer's mix,
  ``trainable="mix"``, then a Dense softmax) over the same batches.

Prints one JSON line: the machine, each backend's median tokens/s, and
each backend's ratio to TensorFlow (median of the per-round ratios).

Usage::

    python bench/backends.py --rounds 3
    python bench/backends.py --quick --rounds 1     # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import common

BACKENDS = ("tensorflow", "jax", "torch")
#: sentences' ids padded to a multiple of this many positions
PAD_TO = 8


def _batches(corpus, batch_size, workdir):
    """The corpus as ``[(ids, n_tokens)]`` batches, sorted by length."""
    import numpy as np

    from bilm_keras import Batcher

    batcher = Batcher(os.path.join(workdir, "vocab.txt"), 50)
    ordered = sorted(corpus, key=len)
    batches = []
    for start in range(0, len(ordered), batch_size):
        rows = ordered[start:start + batch_size]
        ids = batcher.batch_sentences(rows)
        width = -(-ids.shape[1] // PAD_TO) * PAD_TO
        ids = np.pad(ids, [(0, 0), (0, width - ids.shape[1]), (0, 0)])
        batches.append((ids.astype(np.int32), sum(len(s) for s in rows)))
    return batches


def measure(workdir, args) -> dict:
    """In a child: this backend's tokens/s of each side, one pass each."""
    import keras
    import numpy as np

    from bilm_keras import ELMoEmbedding

    corpus = common.make_corpus(n_sentences=args.sentences)
    batches = _batches(corpus, args.batch_size, workdir)
    n_tokens = sum(n for _, n in batches)
    layer = ELMoEmbedding.from_pretrained(workdir, output="layers",
                                          token_cache_size=0)
    inputs = keras.Input((None, 50), dtype="int32")
    embed = keras.Model(inputs, layer(inputs))
    mix = ELMoEmbedding.from_pretrained(workdir, token_cache_size=0)
    tags = keras.layers.Dense(8, activation="softmax")(mix(inputs))
    tagger = keras.Model(inputs, tags)
    tagger.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    labels = [rng.integers(0, 8, (ids.shape[0], ids.shape[1] - 2))
              for ids, _ in batches]

    def embed_pass():
        for ids, _ in batches:
            embed.predict_on_batch(ids)

    def fit_pass():
        for (ids, _), y in zip(batches, labels):
            tagger.train_on_batch(ids, y)

    out = {"backend": keras.backend.backend()}
    for name, run in (("embed", embed_pass), ("fit_mix", fit_pass)):
        start = time.perf_counter()
        run()  # warm-up: traces and compiles every batch shape
        out[f"{name}_warmup_s"] = time.perf_counter() - start
        start = time.perf_counter()
        run()
        out[f"{name}_tokens_per_s"] = n_tokens / (time.perf_counter() - start)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    common.add_model_workdir_arguments(parser)
    args = parser.parse_args(argv)
    if args._measure:
        print(json.dumps(measure(args._measure, args)))
        return {}
    workdir = args.workdir or tempfile.mkdtemp(prefix="backends.")
    common.write_bench_model(workdir, args.quick)
    with open(os.path.join(workdir, "vocab.txt"), "w") as f:
        f.write("<S>\n</S>\n<UNK>\n")  # the char ids need no more
    backends = args.backends.split(",")
    child_args = ["--sentences", str(args.sentences),
                  "--batch_size", str(args.batch_size),
                  "--_measure", workdir]

    def run(backend):
        return common.run_json_child(
            [os.path.abspath(__file__)] + child_args,
            env={"KERAS_BACKEND": backend})

    runs = common.alternating_rounds(backends, args.rounds, run)
    report = {"machine": common.machine(), "quick": args.quick,
              "sentences": args.sentences, "batch_size": args.batch_size,
              "rounds": args.rounds}
    for backend, results in runs.items():
        for key in ("embed_tokens_per_s", "fit_mix_tokens_per_s",
                    "embed_warmup_s", "fit_mix_warmup_s"):
            values = sorted(r[key] for r in results)
            report[f"{backend}_{key}"] = round(values[len(values) // 2], 1)
    if "tensorflow" in runs:
        for backend in backends:
            for key in ("embed_tokens_per_s", "fit_mix_tokens_per_s"):
                report[f"{backend}_{key.split('_tokens')[0]}_ratio"] = round(
                    common.median_ratio(
                        [r[key] for r in runs[backend]],
                        [r[key] for r in runs["tensorflow"]]), 3)
    report["machine"]["load_avg_1min_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
