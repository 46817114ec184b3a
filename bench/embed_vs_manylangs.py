"""Embedding with an ELMoForManyLangs model against upstream's own code.

One model of the released size (``manylangs_convert.py``'s writer:
upstream's ``cnn_50_100_512_4096_sample.json``, random weights, a 3,000-row
char.dic and a 50,000-row word.dic, both .pkl files in torch's legacy
serialization), embedded two ways, each in its own fresh process, the two
alternating round after round so that the machine's load hits both alike:

* upstream: HIT-SCIR/ELMoForManyLangs' ``Embedder(model_dir)`` (its code
  unchanged, imported from a checkout: ``--manylangs_dir``) and
  ``sents2elmo(sentences, output_layer=-2)``, every layer, as its README
  runs it (batch 64, its default; torch's own thread pools);
* ours: the model converted once (``convert_manylangs``, no torch), then
  ``BidirectionalLanguageModel(...).embed_sentences(sentences)``, every
  layer, the default call.

The sentences are ``common.make_corpus``'s (256 sentences, 6,297 tokens),
whose words are all in the model's word.dic. Each process loads the model
(timed), does one warm-up pass and ``--passes`` timed passes; tokens/s
count real tokens (no ``<bos>``/``<eos>``). Before timing, both embed the
first four sentences from a fresh model and the largest difference is
reported (upstream is stateful: a fresh ``Embedder``'s first batch starts
from zero states, as ours always does).

Upstream needs torch (this project's ``torch`` extra) and ``overrides``
(``pip install overrides==3.1.0``, the version its fixture was made with)
in the interpreter that runs it (``--manylangs_python``, default this
one), and its source: ``git clone
https://github.com/HIT-SCIR/ELMoForManyLangs`` (commit b3de5f1 measured).

Usage::

    python bench/embed_vs_manylangs.py --manylangs_dir ../ELMoForManyLangs \\
        --rounds 3
    python bench/embed_vs_manylangs.py --manylangs_dir ... --quick

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import common

CHECK_SENTENCES = 4
MANYLANGS_CONVERT = os.path.join(common.BENCH_DIR, "manylangs_convert.py")


def check_manylangs_dir(path) -> str:
    """``path`` made absolute; ValueError unless it holds upstream's
    ``elmoformanylangs/elmo.py``."""
    if not path or not os.path.isfile(
            os.path.join(path, "elmoformanylangs", "elmo.py")):
        raise ValueError(
            f"--manylangs_dir: expected a checkout of HIT-SCIR/"
            f"ELMoForManyLangs (with elmoformanylangs/elmo.py), found "
            f"{path!r}")
    return os.path.abspath(path)


def upstream_child(model_dir: str, args) -> dict:
    """In upstream's interpreter: its tokens/s, every layer."""
    import numpy as np
    import torch

    sys.path.insert(0, check_manylangs_dir(args.manylangs_dir))
    from elmoformanylangs import Embedder

    corpus = common.make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(map(len, corpus))
    # the first batch of a fresh Embedder: zero states, as ours
    np.savez(os.path.join(args.workdir, "upstream_check.npz"),
             *Embedder(model_dir).sents2elmo(corpus[:CHECK_SENTENCES],
                                             output_layer=-2))
    t0 = time.perf_counter()
    embedder = Embedder(model_dir)
    load_s = time.perf_counter() - t0
    embedder.sents2elmo(corpus, output_layer=-2)  # warm-up
    times = common.time_passes(
        lambda: embedder.sents2elmo(corpus, output_layer=-2), args.passes)
    return dict(tokens_per_s=n_tokens / statistics.median(times),
                pass_s_all=[round(t, 3) for t in times], load_s=load_s,
                peak_rss_mib=common.peak_rss_mib(), torch=torch.__version__,
                threads=torch.get_num_threads())


def ours_child(converted: str, args) -> dict:
    """In this project's interpreter: our tokens/s, the default call."""
    from bilm_keras import BidirectionalLanguageModel

    corpus = common.make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(map(len, corpus))
    t0 = time.perf_counter()
    model = BidirectionalLanguageModel(
        os.path.join(converted, "options.json"),
        os.path.join(converted, "lm_weights.hdf5"))
    load_s = time.perf_counter() - t0
    max_abs_diff = common.max_abs_diff_to_saved(
        os.path.join(args.workdir, "upstream_check.npz"),
        model.embed_sentences, corpus[:CHECK_SENTENCES])
    model.embed_sentences(corpus)  # warm-up
    times = common.time_passes(lambda: model.embed_sentences(corpus),
                               args.passes)
    return dict(tokens_per_s=n_tokens / statistics.median(times),
                pass_s_all=[round(t, 3) for t in times], load_s=load_s,
                peak_rss_mib=common.peak_rss_mib(),
                max_abs_diff_vs_upstream=max_abs_diff)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manylangs_dir",
                        default=os.environ.get("MANYLANGS_DIR"),
                        help="a checkout of HIT-SCIR/ELMoForManyLangs "
                             "(default: $MANYLANGS_DIR)")
    parser.add_argument("--manylangs_python", default=sys.executable,
                        help="the interpreter that runs upstream (with "
                             "torch and overrides; default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=None,
                        help="timed passes per process (default 2; 1 quick)")
    parser.add_argument("--n_sentences", type=int, default=None,
                        help="default 256 (16 quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny model (a smoke check of the script)")
    parser.add_argument("--workdir", default=None,
                        help="keep the models here (default: a temp dir)")
    parser.add_argument("--_upstream", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_ours", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.passes = args.passes or (1 if args.quick else 2)
    args.n_sentences = args.n_sentences or (16 if args.quick else 256)
    try:
        args.manylangs_dir = check_manylangs_dir(args.manylangs_dir)
    except ValueError as e:
        parser.error(str(e))
    if args._upstream:
        print(json.dumps(upstream_child(args._upstream, args)))
        return
    if args._ours:
        print(json.dumps(ours_child(args._ours, args)))
        return

    quick = ["--quick"] if args.quick else []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        model_dir = os.path.join(work, "manylangs.model")
        converted = os.path.join(work, "converted")
        sizes = ["--n_sentences", str(args.n_sentences)]
        # torch writes the released format; ours converts it without torch
        common.run_json_child([MANYLANGS_CONVERT, "--_write", model_dir]
                              + sizes + quick, common.TF_CHILD_ENV)
        convert = common.run_json_child(
            [MANYLANGS_CONVERT, "--_convert", model_dir, converted] + quick,
            common.TF_CHILD_ENV)
        child = [os.path.abspath(__file__), "--manylangs_dir",
                 args.manylangs_dir, "--workdir", work,
                 "--passes", str(args.passes)] + sizes
        rounds = []
        for _ in range(args.rounds):
            theirs = common.run_json_child(
                child + ["--_upstream", model_dir],
                python=args.manylangs_python)
            ours = common.run_json_child(child + ["--_ours", converted],
                                         common.TF_CHILD_ENV)
            rounds.append(dict(upstream=theirs, ours=ours,
                               load_avg_1min=round(os.getloadavg()[0], 2)))

    def median(side, key):
        return statistics.median(r[side][key] for r in rounds)

    ours = [r["ours"]["tokens_per_s"] for r in rounds]
    theirs = [r["upstream"]["tokens_per_s"] for r in rounds]
    print(json.dumps(dict(
        **common.machine(), quick=args.quick, sentences=args.n_sentences,
        passes=args.passes, convert_s=round(convert["convert_s"], 2),
        ours_tokens_per_s=median("ours", "tokens_per_s"),
        upstream_tokens_per_s=median("upstream", "tokens_per_s"),
        ratio=common.median_ratio(ours, theirs),
        ratio_by_round=[round(o / t, 3) for o, t in zip(ours, theirs)],
        ours_load_s=median("ours", "load_s"),
        upstream_load_s=median("upstream", "load_s"),
        ours_peak_rss_mib=max(r["ours"]["peak_rss_mib"] for r in rounds),
        upstream_peak_rss_mib=max(r["upstream"]["peak_rss_mib"]
                                  for r in rounds),
        max_abs_diff_vs_upstream=max(
            r["ours"]["max_abs_diff_vs_upstream"] for r in rounds),
        torch=rounds[0]["upstream"]["torch"],
        upstream_threads=rounds[0]["upstream"]["threads"],
        load_avg_1min_by_round=[r["load_avg_1min"] for r in rounds],
    )))


if __name__ == "__main__":
    main()
