"""``bilm-keras pipeline``: vocabulary -> train -> test -> HDF5 -> ELMo."""

import inspect

from bilm_keras.cli._common import (
    check_glob,
    check_options_flag,
    options_arg,
    positive_int,
    seed_int,
)
from bilm_keras.cli._model_flags import ModelJob
from bilm_keras.training.pipeline import run_pipeline

NAME = "pipeline"
ALIAS = "run_pipeline.py"
HELP = "the whole path on one machine: vocabulary, training, perplexity, " \
       "HDF5, embeddings"
#: ``{parameter: default}`` of :func:`run_pipeline`: the flags'
DEFAULTS = {name: p.default
            for name, p in inspect.signature(run_pipeline).parameters.items()
            if p.default is not inspect.Parameter.empty}
#: the library's name of a flag that is not the flag's
FLAGS = {"options_file": "--options"}
DESCRIPTION = """\
Build a vocabulary, train a small biLM, measure its heldout perplexity,
write bilm-tf HDF5 weights and embed two heldout sentences with them. By
default it trains on the English docstrings of Python's standard library
(nothing is downloaded; a few minutes on 2 CPU cores); --corpus trains on
your own text."""
EPILOG = """\
examples:
  bilm-keras pipeline                      # writes runs/pipeline-<timestamp>/
  bilm-keras pipeline --out_dir out/ --corpus 'my_corpus/*.txt' \\
      --heldout 'my_heldout/*.txt' --options small"""


def add_arguments(parser):
    parser.add_argument("--out_dir", default=None,
                        help="where everything goes (default: a new "
                             "runs/pipeline-<timestamp>/)")
    parser.add_argument("--corpus", default=DEFAULTS["corpus"],
                        help="glob of training files (default: the "
                             "standard library's docstrings)")
    parser.add_argument("--heldout", default=DEFAULTS["heldout"],
                        help="glob of heldout files (default: part of the "
                             "stdlib corpus, or --corpus itself)")
    parser.add_argument("--options", type=options_arg,
                        default=DEFAULTS["options_file"], metavar="OPTIONS",
                        help="the model: an options.json, or a preset "
                             "(tiny, small, elmo_2x4096_512_2048cnn_2x"
                             "highway)")
    parser.add_argument("--n_epochs", type=positive_int,
                        default=DEFAULTS["n_epochs"],
                        help="override the options' epochs")
    parser.add_argument("--max_sentences", type=positive_int,
                        default=DEFAULTS["max_sentences"],
                        help="size of the stdlib corpus")
    parser.add_argument("--min_count", type=positive_int,
                        default=DEFAULTS["min_count"],
                        help="vocabulary cut-off")
    parser.add_argument("--seed", type=seed_int, default=DEFAULTS["seed"],
                        help="seed of the corpus sample and the training, "
                             "0..2**32-1 (default: %(default)s)")


def check(args) -> ModelJob:
    """The options (``--options``, a preset by default: argparse gave its
    file) and the globs; the job :func:`run` executes."""
    check_options_flag(args.options)
    if args.corpus is not None:
        check_glob(args.corpus, "--corpus")
    if args.heldout is not None:
        check_glob(args.heldout, "--heldout")
    return ModelJob(args, args.options, weight_file=None, vocab_file=None)


def run(job: ModelJob) -> dict:
    import time

    args = job.args
    out_dir = args.out_dir or time.strftime("runs/pipeline-%Y%m%d-%H%M%S")
    print(f"writing to {out_dir}", flush=True)
    return run_pipeline(
        out_dir=out_dir, corpus=args.corpus, heldout=args.heldout,
        options_file=job.options_file, n_epochs=args.n_epochs,
        max_sentences=args.max_sentences, min_count=args.min_count,
        seed=args.seed,
    )
