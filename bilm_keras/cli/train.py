"""``bilm-keras train``: train a biLM (bilm-tf's ``train_elmo.py``)."""

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
    check_run_flags,
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
    or ``--init_checkpoint`` (a save_dir, a Paddle checkpoint). The run's
    own rules are :class:`TrainingRun`'s (:func:`check_run_flags`)."""
    if args.init_model is not None:
        given = [flag for flag in ("--options", "--init_weights",
                                   "--init_checkpoint")
                 if getattr(args, flag[2:]) is not None]
        if given:
            parser.error(f"give either --init_model or "
                         f"{' and '.join(given)}, not both")
    check_run_flags(args, parser)


def check(args) -> TrainJob:
    """The settings, then the files (``--init_model``'s fetched into the
    cache only once the cheap checks pass), then the options: the job
    :func:`run` executes, built once."""
    run = training_run(args)  # the settings, before any file
    check_file(args.vocab_file, "--vocab_file")
    check_glob(args.train_prefix, "--train_prefix")
    if args.init_checkpoint is not None:
        _check_init_checkpoint(run, own_options=args.options is None)
    if args.init_vocab_file is not None:
        check_file(args.init_vocab_file, "--init_vocab_file")
    if args.init_model is not None:  # the cheap checks passed: fetch it
        model = resolve_model_flag(args.init_model, "--init_model")
        run = run.replace(init_weights=model.weight_file)
        options, source = _options_file(model.options_file)
    elif args.options is not None:
        options, source = _options_file(args.options)
    elif args.init_checkpoint is not None:
        options, source = _checkpoint_options(run.init_model)
    else:
        from bilm_keras.presets import preset_file

        options, source = _options_file(preset_file(DEFAULT_OPTIONS))
    check_run_options(options, source, args)
    if args.init_weights is not None:
        check_file(args.init_weights, "--init_weights")
    if args.init_model is not None or (args.options is None and
                                       args.init_checkpoint is not None):
        # another run's options: an epoch is a pass over YOUR corpus
        options = options.replace(n_train_tokens=None)
    return TrainJob(run=run, options=options)


def _check_init_checkpoint(run, *, own_options: bool) -> None:
    """``--init_checkpoint``: a Paddle checkpoint, a file or a folder, or
    a TensorFlow save_dir, which holds the options unless ``--options``
    gives them."""
    from bilm_keras.weights.model_detection import ModelDetectionError

    try:
        init = run.init_model  # detected once, for the whole command
    except ModelDetectionError:
        check_dir(run.init_checkpoint, "--init_checkpoint")  # its words
        raise
    if init.is_paddle:
        return
    if own_options:
        check_save_dir(run.init_checkpoint, "--init_checkpoint")
    else:
        check_dir(run.init_checkpoint, "--init_checkpoint")


def _options_file(path: str) -> tuple:
    """``(options, path)`` of an ``options.json`` (``--options``'s, a
    preset's, a published model's)."""
    return check_options_flag(path), path


def _checkpoint_options(init) -> tuple:
    """``(options, where they come from)`` of ``--init_checkpoint``: a
    Paddle checkpoint's, converted, or its save_dir's options JSON."""
    if init.is_paddle:
        from bilm_keras.options import BiLMOptions
        from bilm_keras.weights.paddle_conversion import paddle_options

        return BiLMOptions.from_dict(paddle_options(init.checkpoint),
                                     source=init.checkpoint), init.checkpoint
    return _options_file(init.options_file)


def run(job: TrainJob) -> dict:
    from bilm_keras.training import train

    return train(job.options, job.run)
