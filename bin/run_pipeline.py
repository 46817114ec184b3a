"""Vocabulary -> train a tiny biLM -> heldout perplexity -> HDF5 -> ELMo.

Runs in a few minutes on 2 CPU cores with no download: by default it
trains on the English docstrings of Python's standard library.

Usage::

    python bin/run_pipeline.py          # writes runs/pipeline-<timestamp>/
    python bin/run_pipeline.py --out_dir /tmp/elmo_pipeline
    python bin/run_pipeline.py --out_dir out/ --corpus 'my_corpus/*.txt' \\
        [--heldout 'my_heldout/*.txt'] [--options options/small.json]
"""

import argparse
import time

from bilm_keras.training.pipeline import TINY_OPTIONS, run_pipeline


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out_dir", default=None,
                        help="default: a new runs/pipeline-<timestamp>/")
    parser.add_argument("--corpus", default=None,
                        help="glob of training files (default: stdlib "
                             "docstrings)")
    parser.add_argument("--heldout", default=None,
                        help="glob of heldout files")
    parser.add_argument("--options", default=TINY_OPTIONS)
    parser.add_argument("--n_epochs", type=int, default=None)
    parser.add_argument("--max_sentences", type=int, default=6000)
    parser.add_argument("--min_count", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out_dir = args.out_dir or time.strftime("runs/pipeline-%Y%m%d-%H%M%S")
    print(f"writing to {out_dir}", flush=True)
    return run_pipeline(
        out_dir=out_dir, corpus=args.corpus, heldout=args.heldout,
        options_file=args.options, n_epochs=args.n_epochs,
        max_sentences=args.max_sentences, min_count=args.min_count,
        seed=args.seed,
    )


if __name__ == "__main__":
    main()
