"""A fresh process's first calls, most of them tracing: ``train()`` of a
few steps, and a model's first ``embed_sentences``, with the package as it
is (every ``tf.function`` without AutoGraph:
``bilm_keras/_utils/graph_function.py``) against the same with AutoGraph
forced back on.

The parent writes a deterministic corpus (``common.write_corpus_file``),
its vocabulary (``build_vocab``) and random weights for the model
(``common.write_model``): the ``small`` preset (``--quick``: the benches'
tiny model), trained at batch ``--batch``. Then, round by round, fresh
processes, alternating the two ways (and which goes first):

* ``product``: the package as it is;
* ``autograph``: ``tf.function`` patched in the child before the package
  is imported, so that every graph the package traces is converted by
  AutoGraph again (``tf.function``'s default; the switch lives here, never
  in the package);

one process ``train()``s ``--steps`` steps into a fresh ``save_dir``
(``train_s``: the call, with its model, tracing and steps), another builds
a :class:`~bilm_keras.BidirectionalLanguageModel` from the weights and
embeds ``--sentences`` sentences of mixed lengths (``load_s``,
``first_batch_s``). ``process_s`` is each process as the parent sees it.
The two ways must train to the same loss and give the same vectors (equal
bit for bit: the same graphs but for AutoGraph's wrappers). Prints ONE
JSON line: medians per way and the medians of the per-round ratios
``autograph / product``. Usage::

    python bench/first_call.py                # small preset, 5 rounds
    python bench/first_call.py --rounds 3 --steps 5
    python bench/first_call.py --quick        # tiny (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import common

WAYS = ("product", "autograph")


# ------------------------------------------------------------- children
def force_autograph() -> None:
    """``tf.function`` with ``autograph=True`` whatever its caller asks:
    the package's graphs as they were traced before it turned AutoGraph
    off."""
    import tensorflow as tf

    function = tf.function

    def with_autograph(func=None, **kwargs):
        kwargs["autograph"] = True
        return function(func, **kwargs)

    tf.function = with_autograph


def measure_train(workdir: str, steps: int, batch: int) -> dict:
    """``train()`` of ``steps`` steps into a fresh save_dir."""
    from bilm_keras import BiLMOptions
    from bilm_keras.training import TrainingRun, train

    options = BiLMOptions.from_json(os.path.join(workdir, "train.json"))
    run = TrainingRun(
        train_prefix=os.path.join(workdir, "corpus.txt"),
        vocab_file=os.path.join(workdir, "vocab.txt"),
        save_dir=tempfile.mkdtemp(dir=workdir), batch_size=batch, seed=1,
        max_steps=steps, log_every=steps, save_every=10 ** 6)
    t0 = time.perf_counter()
    result = train(options, run)
    train_s = time.perf_counter() - t0
    return dict(train_s=train_s, step=result["step"],
                perplexity=result["perplexity"])


def measure_embed(workdir: str, n: int, out: str) -> dict:
    """The model from its files, then its first batch."""
    import numpy as np

    from bilm_keras import BidirectionalLanguageModel

    corpus = common.make_corpus(n_sentences=n, min_len=1, seed=7)
    t0 = time.perf_counter()
    bilm = BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"))
    t1 = time.perf_counter()
    vectors = bilm.embed_sentences(corpus)
    t2 = time.perf_counter()
    np.savez(out, *vectors)
    return dict(load_s=t1 - t0, first_batch_s=t2 - t1)


def child(args) -> dict:
    t0 = time.perf_counter()
    if args.autograph:
        force_autograph()
    import tensorflow as tf  # noqa: F401

    import bilm_keras  # noqa: F401

    import_s = time.perf_counter() - t0
    if args._train:
        result = measure_train(args._train, args.steps, args.batch)
    else:
        result = measure_embed(args._embed[0], args.sentences,
                               args._embed[1])
    return dict(result, import_s=import_s)


# --------------------------------------------------------------- parent
def prepare(workdir: str, quick: bool, n_sentences: int) -> dict:
    """The corpus, its vocabulary, the training options and the model to
    embed with, in ``workdir``."""
    from bilm_keras.data.vocab_builder import build_vocab

    n_tokens = common.write_corpus_file(
        os.path.join(workdir, "corpus.txt"), n_sentences)
    vocab = build_vocab(os.path.join(workdir, "corpus.txt"),
                        os.path.join(workdir, "vocab.txt"))
    if quick:
        options = dict(common.QUICK_OPTIONS)
    else:
        with open(common.SMALL_OPTIONS_FILE) as f:
            options = json.load(f)
    options["n_tokens_vocab"] = vocab["n_tokens_vocab"]
    with open(os.path.join(workdir, "train.json"), "w") as f:
        json.dump(options, f)
    common.write_model(workdir, options)
    return dict(preset="tiny" if quick else "small", n_tokens=n_tokens,
                n_tokens_vocab=vocab["n_tokens_vocab"])


def run_way(way: str, workdir: str, args, out: str) -> dict:
    env = common.checkout_child_env()
    shared = ["--steps", str(args.steps), "--batch", str(args.batch),
              "--sentences", str(args.sentences)] + (
        ["--autograph"] if way == "autograph" else [])
    result = {}
    for role in (["--_train", workdir], ["--_embed", workdir, out]):
        t0 = time.perf_counter()
        report = common.run_json_child(
            [os.path.abspath(__file__)] + role + shared, env)
        kind = role[0].removeprefix("--_")
        report[f"{kind}_process_s"] = time.perf_counter() - t0
        report[f"{kind}_import_s"] = report.pop("import_s")
        result.update(report)
    return result


def same_vectors(a: str, b: str) -> bool:
    import numpy as np

    with np.load(a) as x, np.load(b) as y:
        return sorted(x.files) == sorted(y.files) and all(
            np.array_equal(x[k], y[k]) for k in x.files)


MEASURES = ("train_s", "load_s", "first_batch_s", "train_process_s",
            "embed_process_s", "train_import_s")


def summary(runs: dict) -> dict:
    report = {}
    for way in WAYS:
        report[way] = {m: statistics.median(r[m] for r in runs[way])
                       for m in MEASURES}
        report[way]["train_s_all"] = [round(r["train_s"], 3)
                                      for r in runs[way]]
        report[way]["first_batch_s_all"] = [round(r["first_batch_s"], 3)
                                            for r in runs[way]]
    for m in ("train_s", "first_batch_s", "train_process_s",
              "embed_process_s"):
        report[f"{m}_ratio_autograph_over_product"] = round(
            common.median_ratio([r[m] for r in runs["autograph"]],
                                [r[m] for r in runs["product"]]), 3)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model; asserts nothing about speed")
    parser.add_argument("--rounds", type=int, default=5,
                        help="processes per way and role, alternating")
    parser.add_argument("--steps", type=int, default=3,
                        help="training steps in each train()")
    parser.add_argument("--batch", type=int, default=8,
                        help="training batch size")
    parser.add_argument("--sentences", type=int, default=16,
                        help="sentences in the first batch embedded")
    parser.add_argument("--workdir", default=None,
                        help="keep the files here (default: a temp dir)")
    parser.add_argument("--autograph", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--_train", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_embed", nargs=2, default=None,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._train or args._embed:
        print(json.dumps(child(args)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        model = prepare(workdir, args.quick, 64 if args.quick else 256)
        outs = {way: os.path.join(workdir, f"{way}.npz") for way in WAYS}
        runs = common.alternating_rounds(
            WAYS, args.rounds,
            lambda way: run_way(way, workdir, args, outs[way]))
        report = dict(
            summary(runs), machine=common.machine(), model=model,
            steps=args.steps, batch=args.batch, sentences=args.sentences,
            rounds=args.rounds,
            vectors_equal=same_vectors(outs["product"], outs["autograph"]),
            perplexity_equal=len({r["perplexity"] for way in WAYS
                                  for r in runs[way]}) == 1,
            steps_run=sorted({r["step"] for way in WAYS
                              for r in runs[way]}))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
