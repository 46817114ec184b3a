"""Embedding throughput against AllenNLP's ELMo: the same weights, one run.

Both systems embed the corpus of ``embed_throughput.py`` (256 sentences,
6,297 tokens), all three layers, with random weights of the published
model's size written once in bilm-tf's HDF5 layout, which both read.
AllenNLP runs ``allennlp.modules.elmo._ElmoBiLm`` (what ``Elmo`` and its
embedders call) on the sentences sorted by length, in batches of 32 and of
64 (its best settings), ``torch.no_grad()``, every core; each batch's
activations go to numpy per sentence, as ours come back. Ours runs
``BidirectionalLanguageModel.embed_sentences(sentences)``, the default
call. Each system runs in its own fresh process, the two alternating round
after round so that the machine's load hits both alike; each process does
one warm-up pass and ``--passes`` timed passes. Tokens/s count real tokens
(no ``<S>``/``</S>``). Before timing, both embed the first four sentences
and the largest difference of their three layers is reported (AllenNLP's
LSTMs are stateful, so that is checked on its first batch, from zero
states, which ours always start from).

AllenNLP 2.10.1 (its last release) does not install on Python 3.11 by its
own requirements; it runs here from its own venv, made once with::

    python3 -m venv ../anlp-venv
    ../anlp-venv/bin/pip install torch==2.13.0 h5py numpy
    ../anlp-venv/bin/pip install --no-deps allennlp==2.10.1
    ../anlp-venv/bin/pip install spacy cached_path lmdb dill base58 \\
        more_itertools "huggingface_hub<0.25" "transformers<4.45" \\
        torchvision fairscale

(``torchvision`` and ``fairscale`` pull a newer torch; the run reports the
version it used. Where pip caps torch, as on this project's machines,
name the pair it allows: ``torch==2.14.1 torchvision==0.29.1
fairscale``. ``allennlp.data`` imports ``torchvision``, so it is needed.
Where torchvision's compiled operators do not match a CPU-only torch
(``operator torchvision::nms does not exist`` at the import), an empty
``torchvision`` package in the venv's ``site-packages`` is enough:
AllenNLP reads images with it, and ELMo uses none of it.)

Usage::

    python bench/embed_vs_allennlp.py --allennlp_python ../anlp-venv/bin/python
    python bench/embed_vs_allennlp.py --quick --allennlp_python ...

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

# the standard library only: the AllenNLP child imports this module too
import common
from common import make_corpus, run_json_child

CHECK_SENTENCES = 4


def _files(workdir):
    return (os.path.join(workdir, "options.json"),
            os.path.join(workdir, "weights.hdf5"))


def allennlp_child(workdir, args) -> dict:
    """In AllenNLP's interpreter: its tokens/s per batch size."""
    import numpy as np
    import torch
    from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids

    torch.set_num_threads(os.cpu_count())
    corpus = make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(map(len, corpus))
    t0 = time.perf_counter()
    bilm = _ElmoBiLm(*_files(workdir), requires_grad=False)
    bilm.eval()
    load_s = time.perf_counter() - t0

    def run(batch):  # per sentence (3, n, 1024); position 0 is <S>
        with torch.no_grad():
            acts = [a.numpy() for a in
                    bilm(batch_to_ids(batch))["activations"]]
        return [np.stack([a[row, 1: len(s) + 1] for a in acts])
                for row, s in enumerate(batch)]

    np.savez(os.path.join(workdir, "allennlp_check.npz"),
             *run(corpus[:CHECK_SENTENCES]))  # the first batch: zero states
    order = sorted(range(len(corpus)), key=lambda i: len(corpus[i]))

    def one_pass(batch_size):
        vectors = [None] * len(corpus)
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            for i, v in zip(idx, run([corpus[i] for i in idx])):
                vectors[i] = v
        return vectors

    tokens_per_s = {}
    for batch_size in (32, 64):
        one_pass(batch_size)  # warm-up
        times = []
        for _ in range(args.passes):
            t = time.perf_counter()
            one_pass(batch_size)
            times.append(time.perf_counter() - t)
        tokens_per_s[f"batch_{batch_size}"] = n_tokens / statistics.median(
            times)
    return dict(tokens_per_s=tokens_per_s, load_s=load_s,
                torch=torch.__version__, threads=torch.get_num_threads())


def ours_child(workdir, args) -> dict:
    """In this project's interpreter: our tokens/s, the default call."""
    from bilm_keras import BidirectionalLanguageModel

    corpus = make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(map(len, corpus))
    t0 = time.perf_counter()
    model = BidirectionalLanguageModel(*_files(workdir))
    load_s = time.perf_counter() - t0
    max_abs_diff = common.max_abs_diff_to_saved(
        os.path.join(workdir, "allennlp_check.npz"), model.embed_sentences,
        corpus[:CHECK_SENTENCES])
    model.embed_sentences(corpus)  # warm-up
    times = []
    for _ in range(args.passes):
        t = time.perf_counter()
        model.embed_sentences(corpus)
        times.append(time.perf_counter() - t)
    return dict(tokens_per_s=n_tokens / statistics.median(times),
                load_s=load_s, max_abs_diff_vs_allennlp=max_abs_diff)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allennlp_python",
                        default=os.environ.get("ALLENNLP_PYTHON"),
                        help="the interpreter of a venv with AllenNLP "
                             "(default: $ALLENNLP_PYTHON)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=None)
    parser.add_argument("--n_sentences", type=int, default=None)
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model and 16 sentences (a smoke "
                             "check of the script)")
    parser.add_argument("--_allennlp", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_ours", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.passes is None:
        args.passes = 1 if args.quick else 2
    if args.n_sentences is None:
        args.n_sentences = 16 if args.quick else 256
    if args._allennlp:
        print(json.dumps(allennlp_child(args._allennlp, args)))
        return
    if args._ours:
        print(json.dumps(ours_child(args._ours, args)))
        return
    if not args.allennlp_python or not os.path.exists(args.allennlp_python):
        parser.error(f"--allennlp_python: {args.allennlp_python} does not "
                     "exist (make the venv as this script's docstring says)")

    child = ["--n_sentences", str(args.n_sentences),
             "--passes", str(args.passes)]
    rounds = []
    with tempfile.TemporaryDirectory() as workdir:
        common.write_model(workdir, common.QUICK_OPTIONS if args.quick
                           else common.PUBLISHED_OPTIONS_FILE)
        for _ in range(args.rounds):
            theirs = run_json_child(
                [os.path.abspath(__file__), "--_allennlp", workdir] + child,
                python=args.allennlp_python)
            ours = run_json_child(
                [os.path.abspath(__file__), "--_ours", workdir] + child,
                common.TF_CHILD_ENV)
            best = max(theirs["tokens_per_s"].values())
            rounds.append(dict(allennlp=theirs, ours=ours,
                               ratio_to_best_allennlp=ours["tokens_per_s"]
                               / best,
                               load_avg_1min=os.getloadavg()[0]))

    def median(get):
        return statistics.median(get(r) for r in rounds)

    print(json.dumps(dict(
        date=common.utc_now(),
        cpu=common.cpu_model(), cpu_count=os.cpu_count(), quick=args.quick,
        sentences=args.n_sentences, passes=args.passes,
        ours_tokens_per_s=median(lambda r: r["ours"]["tokens_per_s"]),
        allennlp_tokens_per_s={
            key: median(lambda r, key=key: r["allennlp"]["tokens_per_s"][key])
            for key in rounds[0]["allennlp"]["tokens_per_s"]},
        ratio_to_best_allennlp=median(lambda r: r["ratio_to_best_allennlp"]),
        ratio_by_round=[round(r["ratio_to_best_allennlp"], 3)
                        for r in rounds],
        max_abs_diff_vs_allennlp=max(
            r["ours"]["max_abs_diff_vs_allennlp"] for r in rounds),
        torch=rounds[0]["allennlp"]["torch"],
        load_avg_1min=[round(r["load_avg_1min"], 2) for r in rounds],
    )))


if __name__ == "__main__":
    main()
