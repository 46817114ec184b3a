"""``bilm-keras train``: train a biLM (bilm-tf's ``train_elmo.py``)."""

import os

from bilm_keras.cli._common import (
    check_dir,
    check_file,
    check_glob,
    check_options_flag,
    check_run_options,
    check_save_dir,
    options_arg,
)
from bilm_keras.cli._model_flags import resolve_model_flag
from bilm_keras.cli._training_flags import (
    TrainJob,
    add_adaptation_arguments,
    add_run_arguments,
    training_run,
)
from bilm_keras.options import OPTIONS_FILE

NAME = "train"
ALIAS = "train_elmo.py"
HELP = "train a biLM (bilm-tf's train_elmo.py, same flags)"
#: the preset trained without --options (bilm-tf's train_elmo.py's model)
DEFAULT_OPTIONS = "elmo_2x4096_512_2048cnn_2xhighway"
DESCRIPTION = """\
Train a bidirectional language model on a corpus (one whitespace-tokenized
sentence per line, UTF-8), with bilm-tf's flags. The model is described by
an options.json or a preset's name (--options: tiny, small,
elmo_2x4096_512_2048cnn_2xhighway); checkpoints, the resolved options.json
and TensorBoard logs go to --save_dir. --batch_size is the global batch,
split over the replicas; n_train_tokens is counted from the corpus unless
the options or --n_train_tokens give it.

To adapt a published model to your text, give --init_model with its name
(`bilm-keras models` lists them; an ELMoForManyLangs model keeps its
dictionaries) or --options and --init_weights with its files. To start a
new run from a bilm-tf training checkpoint (its softmax too), give
--init_checkpoint with its save_dir (its options.json is the default
--options) and --init_vocab_file with its vocabulary to keep the softmax
rows of the words the two vocabularies share."""
EPILOG = """\
examples:
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --options small
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --n_gpus 2 --batch_size 256 --n_epochs 3
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --init_model elmo-original --freeze_lm_steps 500
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --options elmo/options.json \\
      --init_weights elmo/lm_weights.hdf5 --freeze_lm_steps 500
  bilm-keras train --train_prefix 'domain/*' --vocab_file vocab.txt \\
      --save_dir adapted/ --init_checkpoint elmo_tf_checkpoint/ \\
      --init_vocab_file elmo/vocab.txt"""


def add_arguments(parser):
    add_run_arguments(parser)
    parser.add_argument(
        "--options", type=options_arg, default=None,
        metavar="OPTIONS",
        help="the model to train: an options.json, or a preset (tiny, "
             f"small, {DEFAULT_OPTIONS}) (default: {DEFAULT_OPTIONS}, the "
             "published model's size)")
    add_adaptation_arguments(parser)


def check_flags(args, parser) -> None:
    """One source of pretrained weights: ``--init_model`` (a published
    model's options and weights), ``--init_weights`` (with ``--options``)
    or ``--init_checkpoint`` (a bilm-tf save_dir)."""
    if args.init_model is not None:
        given = [flag for flag in ("--options", "--init_weights",
                                   "--init_checkpoint")
                 if getattr(args, flag[2:]) is not None]
        if given:
            parser.error(f"give either --init_model or "
                         f"{' and '.join(given)}, not both")
    if args.init_weights is not None and args.init_checkpoint is not None:
        parser.error("give either --init_weights or --init_checkpoint, not "
                     "both")
    if args.init_vocab_file is not None and args.init_checkpoint is None:
        parser.error("--init_vocab_file is the vocabulary of "
                     "--init_checkpoint; give --init_checkpoint")


def _paddle(path) -> bool:
    """A Paddle checkpoint (a persistables directory, a ``.pdparams``)."""
    from bilm_keras.training.paddle_save_dir import locate_paddle_checkpoint

    return locate_paddle_checkpoint(path) is not None


def _paddle_options_file(init_checkpoint: str):
    """The Paddle checkpoint's options as a file: ``(path, the temporary
    folder holding it)``; the folder lives as long as the job holding
    it."""
    import json
    import tempfile

    from bilm_keras.training.paddle_save_dir import locate_paddle_checkpoint
    from bilm_keras.weights.paddle_conversion import paddle_options

    options = paddle_options(locate_paddle_checkpoint(init_checkpoint))
    folder = tempfile.TemporaryDirectory(prefix="bilm_paddle_options.")
    path = os.path.join(folder.name, OPTIONS_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(options, f, indent=2)
    return path, folder


def check(args) -> TrainJob:
    """The settings, then the files (``--init_model``'s fetched into the
    cache only once the cheap checks pass), then the options. Returns the
    job :func:`run` executes."""
    run = training_run(args)  # the settings, before any file
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.train_prefix, "--train_prefix")
    options_file, keep_alive = args.options, None
    # a new run from a training checkpoint: its own options by default
    from_checkpoint = (args.options is None
                       and args.init_checkpoint is not None)
    if from_checkpoint and _paddle(args.init_checkpoint):
        # a Paddle checkpoint has no options.json: the converted options,
        # written for this process
        options_file, keep_alive = _paddle_options_file(args.init_checkpoint)
    elif from_checkpoint:
        check_save_dir(args.init_checkpoint, "--init_checkpoint")
        options_file = os.path.join(args.init_checkpoint, OPTIONS_FILE)
    elif args.init_checkpoint is not None and not _paddle(
            args.init_checkpoint):
        check_dir(args.init_checkpoint, "--init_checkpoint")
    if args.init_vocab_file is not None:
        check_file(args.init_vocab_file, "--init_vocab_file")
    if args.init_model is not None:  # the cheap checks passed: fetch it
        model = resolve_model_flag(args.init_model, "--init_model")
        options_file = model.options_file
        run = run.replace(init_weights=model.weight_file)
    elif options_file is None:
        from bilm_keras.presets import preset_file

        options_file = preset_file(DEFAULT_OPTIONS)
    options = check_options_flag(options_file)
    check_run_options(options, options_file, args)
    if args.init_weights is not None:
        check_file(args.init_weights, "--init_weights")
    return TrainJob(
        options_file=options_file, run=run, keep_alive=keep_alive,
        count_epoch_tokens=args.init_model is not None or from_checkpoint)


def run(job: TrainJob) -> dict:
    from bilm_keras.options import BiLMOptions
    from bilm_keras.training import train

    options = BiLMOptions.from_json(job.options_file)
    if job.count_epoch_tokens:
        # an epoch is a pass over YOUR corpus, not the publisher's
        options = options.replace(n_train_tokens=None)
    return train(options, job.run)
