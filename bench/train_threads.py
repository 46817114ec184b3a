"""Training throughput by TensorFlow's CPU thread pools: one run.

The pools can be sized only before TensorFlow's first op, so each setting
is its own ``train_throughput.py`` process; the settings alternate round
after round so that the machine's load hits them alike. A setting is
``INTRA,INTER`` (threads per op, ops at a time; 0 = TensorFlow's
default); ``auto`` is what ``bilm-keras train`` picks
(:mod:`bilm_keras.training.threads`).

Usage::

    python bench/train_threads.py --rounds 3
    python bench/train_threads.py --settings 0,0 auto 1,4 --rounds 3
    python bench/train_threads.py --quick --rounds 1     # CI smoke run

Prints ONE JSON line: per setting the median tokens/s, its rounds, and
its ratio to the first setting (the median of the per-round ratios).
"""

import argparse
import json
import os
import statistics

import common

TRAIN_THROUGHPUT = os.path.join(common.BENCH_DIR, "train_throughput.py")


def thread_flags(setting: str) -> list:
    if setting == "auto":
        return []
    intra, inter = setting.split(",")
    return ["--intra_threads", intra, "--inter_threads", inter]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+",
                        default=["0,0", "auto", "1,4", "2,4"],
                        help="INTRA,INTER pairs or auto; the first is the "
                        "baseline of the ratios (default: TensorFlow's "
                        "0,0, auto, 1,4, 2,4)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="tiny model (a smoke check of the script)")
    args = parser.parse_args(argv)
    for setting in args.settings:
        if setting != "auto" and not (
                setting.count(",") == 1
                and all(p.isdigit() for p in setting.split(","))):
            parser.error(f"--settings: expected INTRA,INTER (two integers "
                         f">= 0) or auto, found {setting!r}")
    runs = {s: [] for s in args.settings}
    threads = {}
    for _ in range(args.rounds):
        for setting in args.settings:
            out = common.run_json_child(
                [TRAIN_THROUGHPUT, "--passes", str(args.passes)]
                + thread_flags(setting) + (["--quick"] if args.quick else []),
                common.TF_CHILD_ENV)
            runs[setting].append(out["tokens_per_second"])
            threads[setting] = [out["settings"]["intra_threads"],
                                out["settings"]["inter_threads"]]
    base = args.settings[0]
    print(json.dumps(dict(
        date=common.utc_now(),
        cpu=common.cpu_model(), cpu_count=os.cpu_count(), quick=args.quick,
        baseline=base,
        settings={s: dict(
            threads=threads[s],
            tokens_per_s=statistics.median(r),
            rounds=r,
            ratio=round(common.median_ratio(r, runs[base]), 3),
        ) for s, r in runs.items()},
    )))


if __name__ == "__main__":
    main()
