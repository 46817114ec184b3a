"""``bilm-keras restart``: continue training (bilm-tf's ``restart.py``)."""

import os

from bilm_keras.cli._common import (
    check_file,
    check_glob,
    check_options,
    check_run_options,
    check_save_dir,
)
from bilm_keras.cli._training_flags import (
    TrainJob,
    add_run_arguments,
    check_run_flags,
    training_run,
)
from bilm_keras.options import OPTIONS_FILE

NAME = "restart"
ALIAS = "restart.py"
HELP = "continue training from the latest checkpoint (bilm-tf's restart.py)"
DESCRIPTION = """\
Continue training from the latest checkpoint in --save_dir. Without
--n_epochs it finishes the run the saved options describe, continuing the
saved data stream (after a crash: no sentence seen twice or missed); with
--n_epochs (new data, fine-tuning) or another --batch_size it trains that
many more epochs on a new stream.

A save_dir of bilm-tf's own training continues from its checkpoint
(weights, softmax, Adagrad's accumulators, step) on a new stream (bilm-tf
saved no data position), with its options as bilm-tf wrote them
(n_train_tokens included) and its LSTM states carried across sentences as
bilm-tf trained, unless its options.json sets
"reset_states_at_sentence_start"; our checkpoints go beside bilm-tf's,
whose state file is kept as checkpoint.bilm-tf. A latest checkpoint that
does not read whole is named and the newest that does is used."""
EPILOG = """\
examples:
  bilm-keras restart --save_dir ckpt/ --vocab_file vocab.txt \\
      --train_prefix 'corpus/train/*'
  bilm-keras restart --save_dir ckpt/ --vocab_file vocab.txt \\
      --train_prefix 'new_domain/*' --n_epochs 1"""


def add_arguments(parser):
    add_run_arguments(parser)


def check_flags(args, parser) -> None:
    check_run_flags(args, parser)


def check(args) -> TrainJob:
    """The settings, then the save_dir, its options and the inputs: the
    job :func:`run` executes, built once."""
    run = training_run(args)  # the settings, before any file
    check_save_dir(args.save_dir)
    options_file = os.path.join(args.save_dir, OPTIONS_FILE)
    check_run_options(check_options(options_file, "--save_dir"),
                      options_file, args)
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.train_prefix, "--train_prefix")
    return TrainJob(run=run)


def run(job: TrainJob) -> dict:
    from bilm_keras.training import restart

    return restart(job.run)
