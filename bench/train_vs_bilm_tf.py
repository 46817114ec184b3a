"""Training throughput against bilm-tf's own ``train()``: one run.

Both train the mid-size biLM of ``train_throughput.py`` (char-CNN 512
filters, 2 highway, 2 x 2 LSTMs of 1024 cells projected to 128, skip
connections, batch 32, unroll 20, 1024 sampled negatives, 4,000 words) on
the same synthetic corpus and vocabulary (``train_throughput.py``'s
``write_corpus``), from random weights, each in its own fresh process,
the two alternating round after round so that the machine's load hits
both alike.

* bilm-tf: its ``bilm.training.train(options, data, n_gpus=1, ...)``
  unchanged, with ``options["n_train_tokens"]`` set so that it stops after
  ``--steps`` batches. bilm-tf is TensorFlow 1 code: it runs on
  TensorFlow 2.21 through ``tensorflow.compat.v1`` (graph mode) with
  ``TF_USE_LEGACY_KERAS=1`` (``tf_keras`` supplies TF1's
  ``nn.rnn_cell`` classes); the child puts ``tf.compat.v1`` in
  ``sys.modules["tensorflow"]`` before importing ``bilm``, and that is the
  only shim (``bilm_tf_shim.py``). Its step time is the interval between
  its loop's requests for the next batch (the session run, its feed dict,
  its summaries),
  median over the steps after the first ``--skip``.
* bilm-tf again, its TensorFlow's thread pools sized as ours are
  (``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, which its
  ``train()`` reads through TensorFlow): ``ratio_same_threads``. On a
  CPU ``bilm-keras train`` sizes them itself
  (:mod:`bilm_keras.training.threads`); bilm-tf keeps TensorFlow's
  defaults unless its user sets those variables.
* ours: ``train_throughput.py``'s timing of the library's training step
  (``make_train_step`` over ``make_tf_dataset``; no checkpoints or logs),
  ``--passes`` passes of 10 steps after 3 warm-up steps.

oneDNN: each side as its users run it, ours with the CPU class's choice
(``import bilm_keras`` sets it: ``bilm_keras/_utils/cpu_settings.py``),
bilm-tf with TensorFlow's own (off on AVX2-only CPUs). With
``TF_ENABLE_ONEDNN_OPTS`` set, both run with that value. Each round
records what ran (``onednn_ours``, ``onednn_bilm_tf``).

Tokens/s count ``batch * unroll_steps`` words per step (each predicted in
both directions), as both projects count them. bilm-tf's source is not in
this repository: pass a checkout (``git clone
https://github.com/allenai/bilm-tf``) as ``--bilm_tf_dir``.

Usage::

    python bench/train_vs_bilm_tf.py --bilm_tf_dir ../bilm-tf --rounds 3
    python bench/train_vs_bilm_tf.py --bilm_tf_dir ../bilm-tf --quick
    python bench/train_vs_bilm_tf.py --bilm_tf_dir ../bilm-tf \
        --precision mixed_bfloat16     # + ours at float32 in each round

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import common
from bilm_tf_shim import (
    BILM_TF_ENV,
    check_bilm_tf_dir,
    import_bilm_tf,
    train_bilm_tf,
)

TRAIN_THROUGHPUT = os.path.join(common.BENCH_DIR, "train_throughput.py")
#: TensorFlow's oneDNN switch, read at its import
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def bilm_tf_child(workdir: str, args) -> dict:
    """In a fresh process with TF_USE_LEGACY_KERAS=1: bilm-tf's train()."""
    import numpy as np

    v1, training, data_module = import_bilm_tf(args.bilm_tf_dir)
    stamps = []
    options = train_bilm_tf(training, data_module, workdir, args.steps,
                            lambda i: stamps.append(time.perf_counter()))
    tokens_per_step = options["batch_size"] * options["unroll_steps"]
    step_s = np.diff(stamps)[args.skip:]
    n_params = int(sum(np.prod(v.shape.as_list())
                       for v in v1.trainable_variables()))
    from tensorflow.python.util import _pywrap_util_port

    return dict(tokens_per_s=tokens_per_step / float(np.median(step_s)),
                steps_timed=len(step_s), trainable_parameters=n_params,
                tensorflow=v1.VERSION,
                onednn=bool(_pywrap_util_port.IsMklEnabled()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bilm_tf_dir",
                        default=os.environ.get("BILM_TF_DIR"),
                        help="a checkout of allenai/bilm-tf (its bilm/ "
                             "package is imported from there)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None,
                        help="bilm-tf batches per process (default 40; 8 "
                             "quick)")
    parser.add_argument("--skip", type=int, default=5,
                        help="bilm-tf's first steps left out of the timing")
    parser.add_argument("--passes", type=int, default=3,
                        help="our timed passes of 10 steps per process")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (a smoke check of the script)")
    parser.add_argument("--precision", default="float32",
                        help="our training's precision (train_throughput.py "
                             "--precision); other than float32, each round "
                             "also runs ours at float32")
    parser.add_argument("--_bilm_tf", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 8 if args.quick else 40
    if args.quick:
        args.skip = min(args.skip, 2)
    try:
        args.bilm_tf_dir = check_bilm_tf_dir(args.bilm_tf_dir)
    except ValueError as e:
        parser.error(str(e))
    if args._bilm_tf:
        print(json.dumps(bilm_tf_child(args._bilm_tf, args)))
        return

    # train_throughput imports TensorFlow; bilm-tf's child must not have.
    # It imports bilm_keras too, which may set this CPU class's oneDNN
    # choice (bilm_keras._utils.cpu_settings) in this process's
    # environment: bilm-tf's children run as its users run it, with
    # TensorFlow's own choice unless the caller set one
    given_onednn = os.environ.get(ONEDNN_VARIABLE)
    from train_throughput import config, options_dict, write_corpus

    if given_onednn is None:
        os.environ.pop(ONEDNN_VARIABLE, None)

    c = config(args.quick)
    quick = ["--quick"] if args.quick else []
    rounds = []
    with tempfile.TemporaryDirectory() as workdir:
        # the corpus and vocabulary train_throughput.py writes for itself
        write_corpus(workdir, c["vocab"], 3000)
        with open(os.path.join(workdir, "options.json"), "w") as f:
            json.dump(options_dict(c), f)
        bilm_tf = [os.path.abspath(__file__), "--_bilm_tf", workdir,
                   "--bilm_tf_dir", args.bilm_tf_dir,
                   "--steps", str(args.steps), "--skip", str(args.skip)]
        bilm_tf_env = BILM_TF_ENV
        for _ in range(args.rounds):
            theirs = common.run_json_child(bilm_tf, bilm_tf_env)
            ours = common.run_json_child(
                [TRAIN_THROUGHPUT, "--passes", str(args.passes),
                 "--precision", args.precision] + quick,
                common.TF_CHILD_ENV)
            ours_float32 = ours if args.precision == "float32" else (
                common.run_json_child(
                    [TRAIN_THROUGHPUT, "--passes", str(args.passes)] + quick,
                    common.TF_CHILD_ENV))
            # bilm-tf with the thread pools ours picked (through the
            # variables TensorFlow reads; its train() takes no setting)
            threads = ours["settings"]
            theirs_same = common.run_json_child(bilm_tf, dict(
                bilm_tf_env,
                TF_NUM_INTRAOP_THREADS=str(threads["intra_threads"]),
                TF_NUM_INTEROP_THREADS=str(threads["inter_threads"])))
            rounds.append(dict(
                bilm_tf=theirs["tokens_per_s"],
                bilm_tf_same_threads=theirs_same["tokens_per_s"],
                threads=[threads["intra_threads"], threads["inter_threads"]],
                ours=ours["tokens_per_second"],
                ours_float32=ours_float32["tokens_per_second"],
                onednn_bilm_tf=theirs["onednn"],
                onednn_ours=ours["settings"]["onednn"],
                bilm_tf_parameters=theirs["trainable_parameters"],
                our_parameters=ours["trainable_parameters"],
                load_avg_1min=round(os.getloadavg()[0], 2)))

    def median(key):
        return statistics.median(r[key] for r in rounds)

    print(json.dumps(dict(
        date=common.utc_now(),
        cpu=common.cpu_model(), cpu_count=os.cpu_count(), quick=args.quick,
        config=c, bilm_tf_steps=args.steps, bilm_tf_skipped=args.skip,
        precision=args.precision,
        ratio_to_ours_float32=common.median_ratio(
            [r["ours"] for r in rounds], [r["ours_float32"] for r in rounds]),
        ours_tokens_per_s=median("ours"),
        bilm_tf_tokens_per_s=median("bilm_tf"),
        ratio=common.median_ratio([r["ours"] for r in rounds],
                                  [r["bilm_tf"] for r in rounds]),
        ratio_by_round=[round(r["ours"] / r["bilm_tf"], 3) for r in rounds],
        bilm_tf_same_threads_tokens_per_s=median("bilm_tf_same_threads"),
        ratio_same_threads=common.median_ratio(
            [r["ours"] for r in rounds],
            [r["bilm_tf_same_threads"] for r in rounds]),
        rounds=rounds,
    )))


if __name__ == "__main__":
    main()
