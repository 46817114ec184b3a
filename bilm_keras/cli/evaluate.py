"""``bilm-keras test``: heldout perplexity (bilm-tf's ``run_test.py``)."""

import argparse

from bilm_keras.cli._common import (
    SaveDirJob,
    add_checkpoint_argument,
    check_file,
    check_glob,
    detect_save_dir,
    given_flags,
    positive_int,
)

NAME = "test"
ALIAS = "run_test.py"
HELP = "heldout perplexity of a trained biLM (bilm-tf's run_test.py)"
DESCRIPTION = """\
Compute the perplexity of the latest checkpoint in --save_dir (ours,
bilm-tf's or Paddle's) on heldout files, with the full softmax, each
direction and their mean. Every heldout token is seen exactly once (bilm-tf
dropped the last incomplete batch), each sentence from zero LSTM states,
so the figure does not depend on --batch_size. --stateful adds the figure
bilm-tf's run_test.py printed (and the ELMo paper quotes): the LSTM states
carried across the whole heldout stream, one token a step, --batch_size
rows, the last incomplete batch dropped."""
EPILOG = """\
examples:
  bilm-keras test --save_dir ckpt/ --vocab_file vocab.txt \\
      --test_prefix 'corpus/heldout/*'
  bilm-keras test --save_dir bilm_tf_run/ --vocab_file vocab.txt \\
      --test_prefix 'corpus/heldout/*' --stateful --batch_size 1"""


def add_arguments(parser):
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--test_prefix", required=True,
                        help="Prefix (glob) for test files")
    # its default is evaluate()'s, given to it only when the flag is
    parser.add_argument("--batch_size", type=positive_int,
                        default=argparse.SUPPRESS,
                        help="Batch size (default: run_test.py's)")
    parser.add_argument("--stateful", action="store_true",
                        help="also print bilm-tf's run_test.py perplexity "
                             "(states carried across sentences)")
    add_checkpoint_argument(parser, "evaluate")


def check(args) -> SaveDirJob:
    model = detect_save_dir(args.save_dir, args.checkpoint)
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.test_prefix, "--test_prefix")
    return SaveDirJob(args, model)


def run(job: SaveDirJob) -> dict:
    from bilm_keras.training import evaluate

    args = job.args
    return evaluate(save_dir=job.model, vocab_file=args.vocab_file,
                    test_prefix=args.test_prefix, stateful=args.stateful,
                    **given_flags(args, "batch_size"))
