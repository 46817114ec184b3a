"""``bilm-keras train``: train a biLM (bilm-tf's ``train_elmo.py``)."""

import os

from bilm_keras.cli._common import (
    check_dir,
    check_file,
    check_glob,
    check_options,
    check_run_options,
    check_save_dir,
)
from bilm_keras.cli._training_flags import (
    add_adaptation_arguments,
    add_run_arguments,
    training_run,
)

NAME = "train"
ALIAS = "train_elmo.py"
HELP = "train a biLM (bilm-tf's train_elmo.py, same flags)"
OPTIONS_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "options")
DEFAULT_OPTIONS = "elmo_2x4096_512_2048cnn_2xhighway.json"
DESCRIPTION = """\
Train a bidirectional language model on a corpus (one whitespace-tokenized
sentence per line, UTF-8), with bilm-tf's flags. The model is described by
an options.json (--options); checkpoints, the resolved options.json and
TensorBoard logs go to --save_dir. --batch_size is the global batch, split
over the replicas; n_train_tokens is read from VOCAB_FILE.json (written by
`bilm-keras build-vocab`) or counted from the corpus."""
EPILOG = """\
examples:
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --options options/small.json
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --n_gpus 2 --batch_size 256 --n_epochs 3
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --options elmo/options.json \\
      --init_weights elmo/lm_weights.hdf5 --freeze_lm_steps 500
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --init_checkpoint elmo_tf_checkpoint/ \\
      --init_vocab_file elmo/vocab.txt"""


def add_arguments(parser):
    add_run_arguments(parser)
    parser.add_argument(
        "--options", default=None,
        help="options.json of the model to train (default: the published "
             f"model's, options/{DEFAULT_OPTIONS})")
    add_adaptation_arguments(parser)


def check_flags(args, parser) -> None:
    """Flag combinations (usage errors)."""
    if args.init_weights is not None and args.init_checkpoint is not None:
        parser.error("give either --init_weights or --init_checkpoint, not "
                     "both")
    if args.init_vocab_file is not None and args.init_checkpoint is None:
        parser.error("--init_vocab_file is the vocabulary of "
                     "--init_checkpoint; give --init_checkpoint")


def check(args) -> None:
    args.run = training_run(args)  # the settings, before any file
    # a new run from a training checkpoint: its own options by default,
    # with the epoch of the new corpus (counted), not the old one's
    args.options_from_checkpoint = (args.options is None
                                    and args.init_checkpoint is not None)
    if args.options_from_checkpoint:
        check_save_dir(args.init_checkpoint, "--init_checkpoint")
    elif args.init_checkpoint is not None:
        check_dir(args.init_checkpoint, "--init_checkpoint")
    if args.options_from_checkpoint:
        args.options = os.path.join(args.init_checkpoint, "options.json")
    elif args.options is None:
        args.options = os.path.normpath(
            os.path.join(OPTIONS_DIR, DEFAULT_OPTIONS))
    options = check_options(args.options, "--options")
    check_run_options(options, args.options, args)
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.train_prefix, "--train_prefix")
    if args.init_weights is not None:
        check_file(args.init_weights, "--init_weights")
    if args.init_vocab_file is not None:
        check_file(args.init_vocab_file, "--init_vocab_file")


def run(args) -> dict:
    from bilm_keras.options import BiLMOptions
    from bilm_keras.training import train

    options = BiLMOptions.from_json(args.options)
    if args.options_from_checkpoint:
        options = options.replace(n_train_tokens=None)
    return train(options=options, run=args.run)
