"""``bilm-keras train``: train a biLM (bilm-tf's ``train_elmo.py``)."""

from bilm_keras.cli._common import (
    check_file,
    check_glob,
    check_options_flag,
    check_run_options,
    options_arg,
)
from bilm_keras.cli._training_flags import (
    add_adaptation_arguments,
    add_run_arguments,
    training_run,
)

NAME = "train"
ALIAS = "train_elmo.py"
HELP = "train a biLM (bilm-tf's train_elmo.py, same flags)"
#: the preset trained without --options (bilm-tf's train_elmo.py's model)
DEFAULT_OPTIONS = "elmo_2x4096_512_2048cnn_2xhighway"
DESCRIPTION = """\
Train a bidirectional language model on a corpus (one whitespace-tokenized
sentence per line, UTF-8), with bilm-tf's flags. The model is described by
an options.json or a preset's name (--options: tiny, small,
elmo_2x4096_512_2048cnn_2xhighway); checkpoints, the resolved options.json and
TensorBoard logs go to --save_dir. --batch_size is the global batch, split
over the replicas; n_train_tokens is read from VOCAB_FILE.json (written by
`bilm-keras build-vocab`) or counted from the corpus."""
EPILOG = """\
examples:
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --options small
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --n_gpus 2 --batch_size 256 --n_epochs 3
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --options elmo/options.json \\
      --init_weights elmo/lm_weights.hdf5 --freeze_lm_steps 500"""


def add_arguments(parser):
    add_run_arguments(parser)
    parser.add_argument(
        "--options", type=options_arg, default=None,
        metavar="OPTIONS",
        help="the model to train: an options.json, or a preset (tiny, "
             f"small, {DEFAULT_OPTIONS}) (default: {DEFAULT_OPTIONS}, the "
             "published model's size)")
    add_adaptation_arguments(parser)


def check(args) -> None:
    args.run = training_run(args)  # the settings, before any file
    if args.options is None:
        from bilm_keras.presets import preset_file

        args.options = preset_file(DEFAULT_OPTIONS)
    options = check_options_flag(args.options)
    check_run_options(options, args.options, args)
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.train_prefix, "--train_prefix")
    if args.init_weights is not None:
        check_file(args.init_weights, "--init_weights")


def run(args) -> dict:
    from bilm_keras.options import BiLMOptions
    from bilm_keras.training import train

    return train(options=BiLMOptions.from_json(args.options), run=args.run)
