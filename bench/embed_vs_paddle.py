"""PaddlePaddle's Fluid ELMo (the baike model) at the released size:
converting it, and embedding with it against Paddle 1.8.5's own forward
pass.

One checkpoint of the released shapes (52,445 words, 4,096 cells,
projection 512; Paddle's own random initialisers, no training) written by
Paddle 1.8.5 itself with upstream's ``lm_model.py``
(``tests/fixtures/paddle_baike/make_fixtures.py --released_size``, in the
Python 3.7 venv its README describes), then:

* **convert**: ``convert_paddle`` in a fresh process, its time and peak
  resident memory (that process's ``ru_maxrss``);
* **embed**: the same sentences (``--n_sentences`` of 5-40 words drawn
  from the vocabulary, a few unknown) two ways, each in its own fresh
  process, alternating round after round so that the machine's load hits
  both alike:

  * Paddle: upstream's ``LanguageModel`` (``test_mode``), all sentences in
    one LoD batch from zero states, the program pruned to the embedding
    and the LSTM layers (``use_prune``: no softmax), CPU, its own thread
    settings;
  * ours: ``BidirectionalLanguageModel(...).embed_sentences(sentences)``
    on the converted files, every layer, the default call.

  Each process loads the model, does one warm-up pass and ``--passes``
  timed passes. Reported: each side's median seconds per pass and tokens
  per second (real tokens), the ratio Paddle / ours of the per-round
  medians, and the largest difference between the two sides' outputs
  (every layer, both directions, every sentence) from the first round.

Usage::

    python bench/embed_vs_paddle.py \\
        --paddle_python ../venv-paddle18/bin/python \\
        --upstream_dir ../upstream_paddle_elmo --rounds 3
    python bench/embed_vs_paddle.py ... --quick   # tiny sizes, a smoke check

Prints ONE JSON line. The checkpoint (about 520 MB) is kept in
``--workdir`` (default a temporary folder) for the next run.
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

MAKE_FIXTURES = os.path.join(common.REPO_ROOT, "tests", "fixtures",
                             "paddle_baike", "make_fixtures.py")
RELEASED = {"vocab_size": 52445, "hidden_size": 4096, "embed_size": 512}
QUICK = {"vocab_size": 300, "hidden_size": 64, "embed_size": 16}


def make_sentences(path: str, n: int, vocab_size: int, seed: int = 7
                   ) -> int:
    """``n`` sentences of vocabulary words (``w<k>``, Zipf-like) and a few
    unknown words; returns the number of tokens."""
    import numpy as np

    rng = np.random.RandomState(seed)
    n_tokens = 0
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n):
            length = int(rng.randint(5, 41))
            ids = np.minimum(rng.zipf(1.3, size=length),
                             vocab_size - 3) - 1
            words = [f"w{k}" for k in ids]
            if rng.rand() < 0.2:
                words[rng.randint(length)] = "未登录词"
            f.write(" ".join(words) + "\n")
            n_tokens += length
    return n_tokens


def child_convert(checkpoint: str, vocab: str, out: str) -> dict:
    from bilm_keras.weights.paddle_conversion import convert_paddle

    start = time.perf_counter()
    convert_paddle(checkpoint, out, vocab_file=vocab, overwrite=True)
    return {"seconds": time.perf_counter() - start,
            "peak_rss_mib": common.peak_rss_mib()}


def child_embed(model_dir: str, sentences_file: str, passes: int,
                outputs: str | None) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np

    from bilm_keras import BidirectionalLanguageModel

    with open(sentences_file, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()]
    start = time.perf_counter()
    bilm = BidirectionalLanguageModel.from_pretrained(model_dir)
    load = time.perf_counter() - start
    bilm.embed_sentences(sentences)  # warm-up
    times = common.time_passes(lambda: bilm.embed_sentences(sentences),
                               passes)
    if outputs:
        vectors = bilm.embed_sentences(sentences)
        np.savez(outputs, *vectors)
    return {"seconds": times, "load_seconds": load,
            "peak_rss_mib": common.peak_rss_mib()}


def max_difference(paddle_npz: str, ours_npz: str, n: int) -> float:
    """The largest |Paddle - ours| over every sentence, layer and
    direction, at the word positions."""
    import numpy as np

    worst = 0.0
    with np.load(paddle_npz) as p, np.load(ours_npz) as o:
        for i in range(n):
            ours = o[f"arr_{i}"]  # (3, words, 2P)
            dim = ours.shape[-1] // 2
            emb = p[f"s{i}_embedding"][1:-1]
            worst = max(worst, float(np.abs(ours[0, :, :dim] - emb).max()))
            for layer in (1, 2):
                fw = p[f"s{i}_fw_{layer}"][1:-1]
                bw = p[f"s{i}_bw_{layer}"][::-1][1:-1]
                worst = max(worst,
                            float(np.abs(ours[layer, :, :dim] - fw).max()),
                            float(np.abs(ours[layer, :, dim:] - bw).max()))
    return worst


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paddle_python", required=True,
                        help="Python 3.7 with paddlepaddle==1.8.5")
    parser.add_argument("--upstream_dir", required=True,
                        help="folder with upstream's lm_model.py and "
                             "data.py (PaddleNLP/ELMO)")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--n_sentences", type=int, default=64)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.paddle_python):
        parser.error(f"--paddle_python: expected a Python 3.7 with "
                     f"paddlepaddle 1.8.5, found {args.paddle_python!r}")
    if not os.path.isfile(os.path.join(args.upstream_dir, "lm_model.py")):
        parser.error(f"--upstream_dir: expected a folder with upstream's "
                     f"lm_model.py, found {args.upstream_dir!r}")
    sizes = QUICK if args.quick else RELEASED
    rounds = 1 if args.quick else args.rounds
    passes = 1 if args.quick else args.passes
    work = args.workdir or tempfile.mkdtemp(prefix="paddle_baike_bench.")
    paddle_dir = os.path.join(work, "paddle")
    size_flags = [f"--{k}={v}" for k, v in sizes.items()]
    make = [MAKE_FIXTURES, "--upstream_dir",
            os.path.abspath(args.upstream_dir), "--out", paddle_dir,
            "--released_size", *size_flags]
    # Paddle writes the checkpoint (kept in --workdir for the next run)
    start = time.perf_counter()
    common.run_json_child(make, python=args.paddle_python)
    write_seconds = time.perf_counter() - start
    checkpoint = os.path.join(paddle_dir, "checkpoint")
    vocab = os.path.join(paddle_dir, "vocab.txt")
    sentences = os.path.join(work, "sentences.txt")
    n_tokens = make_sentences(sentences, args.n_sentences,
                              sizes["vocab_size"])
    converted = os.path.join(work, "converted")
    me = os.path.abspath(__file__)
    conversion = common.run_json_child(
        [me, "convert", checkpoint, vocab, converted])

    paddle_times, our_times, our_runs = [], [], []
    ours_npz = os.path.join(work, "ours.npz")
    for r in range(rounds):
        paddle = common.run_json_child(
            make + ["--embed_sentences", sentences, "--repeats",
                    str(passes)], python=args.paddle_python)
        ours = common.run_json_child(
            [me, "embed", converted, sentences, str(passes),
             ours_npz if r == 0 else ""])
        paddle_times.append(statistics.median(paddle["seconds"]))
        our_times.append(statistics.median(ours["seconds"]))
        our_runs.append(ours)
    difference = max_difference(
        os.path.join(paddle_dir, "paddle_outputs.npz"), ours_npz,
        args.n_sentences)
    result = {
        "bench": "embed_vs_paddle", **common.machine(), "sizes": sizes,
        "paddle_write_checkpoint_seconds": round(write_seconds, 1),
        "checkpoint_mib": round(sum(
            os.path.getsize(os.path.join(checkpoint, n))
            for n in os.listdir(checkpoint)) / 2**20, 1),
        "convert_seconds": round(conversion["seconds"], 2),
        "convert_peak_rss_mib": round(conversion["peak_rss_mib"], 1),
        "n_sentences": args.n_sentences, "n_tokens": n_tokens,
        "rounds": rounds, "passes": passes,
        "paddle_seconds": [round(t, 3) for t in paddle_times],
        "ours_seconds": [round(t, 3) for t in our_times],
        "paddle_tokens_per_s": round(
            n_tokens / statistics.median(paddle_times), 1),
        "ours_tokens_per_s": round(
            n_tokens / statistics.median(our_times), 1),
        "ratio_paddle_over_ours": round(
            common.median_ratio(paddle_times, our_times), 3),
        "ours_load_seconds": round(statistics.median(
            o["load_seconds"] for o in our_runs), 2),
        "ours_peak_rss_mib": round(statistics.median(
            o["peak_rss_mib"] for o in our_runs), 1),
        "max_abs_difference": difference,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "convert":
        print(json.dumps(child_convert(*sys.argv[2:5])))
    elif len(sys.argv) > 1 and sys.argv[1] == "embed":
        print(json.dumps(child_embed(sys.argv[2], sys.argv[3],
                                     int(sys.argv[4]),
                                     sys.argv[5] or None)))
    else:
        main()
