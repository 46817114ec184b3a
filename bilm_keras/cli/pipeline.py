"""``bilm-keras pipeline``: vocabulary -> train -> test -> HDF5 -> ELMo."""

from bilm_keras.cli._common import (
    check_glob,
    check_options_flag,
    options_arg,
    positive_int,
    seed_int,
)
from bilm_keras.cli._model_flags import ModelJob

NAME = "pipeline"
ALIAS = "run_pipeline.py"
HELP = "the whole path on one machine: vocabulary, training, perplexity, " \
       "HDF5, embeddings"
#: the preset trained without --options (training.pipeline's default)
DEFAULT_OPTIONS = "tiny"
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
    parser.add_argument("--corpus", default=None,
                        help="glob of training files (default: the "
                             "standard library's docstrings)")
    parser.add_argument("--heldout", default=None,
                        help="glob of heldout files (default: part of the "
                             "stdlib corpus, or --corpus itself)")
    parser.add_argument("--options", type=options_arg, default=None,
                        metavar="OPTIONS",
                        help="the model: an options.json, or a preset "
                             "(tiny, small, elmo_2x4096_512_2048cnn_2x"
                             "highway) (default: tiny)")
    parser.add_argument("--n_epochs", type=positive_int, default=None,
                        help="override the options' epochs")
    parser.add_argument("--max_sentences", type=positive_int, default=6000,
                        help="size of the stdlib corpus")
    parser.add_argument("--min_count", type=positive_int, default=2,
                        help="vocabulary cut-off")
    parser.add_argument("--seed", type=seed_int, default=0,
                        help="seed of the corpus sample and the training, "
                             "0..2**32-1 (default: 0)")


def check(args) -> ModelJob:
    """The options (the preset ``tiny`` by default) and the globs; the
    job :func:`run` executes."""
    options_file = args.options
    if options_file is None:
        from bilm_keras.presets import preset_file

        options_file = preset_file(DEFAULT_OPTIONS)
    check_options_flag(options_file)
    if args.corpus is not None:
        check_glob(args.corpus, "--corpus")
    if args.heldout is not None:
        check_glob(args.heldout, "--heldout")
    return ModelJob(args, options_file, weight_file=None, vocab_file=None)


def run(job: ModelJob) -> dict:
    import time

    from bilm_keras.training.pipeline import run_pipeline

    args = job.args
    out_dir = args.out_dir or time.strftime("runs/pipeline-%Y%m%d-%H%M%S")
    print(f"writing to {out_dir}", flush=True)
    return run_pipeline(
        out_dir=out_dir, corpus=args.corpus, heldout=args.heldout,
        options_file=job.options_file, n_epochs=args.n_epochs,
        max_sentences=args.max_sentences, min_count=args.min_count,
        seed=args.seed,
    )
