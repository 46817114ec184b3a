"""The flags ``bilm-keras train`` and ``bilm-keras restart`` share
(``train_elmo.py`` and ``restart.py``: bilm-tf's names), defined once,
the :class:`~bilm_keras.training.training_run.TrainingRun` they give and
the :class:`TrainJob` both commands' checks return.

Each flag of a run setting takes its default, and an integer's range,
from the :class:`TrainingRun` field, and the run's rules are checked
there alone: :func:`check_run_flags` reports a bad setting as a usage
error."""

import argparse
import dataclasses
import functools
from typing import Optional

from bilm_keras._utils.settings import SettingError
from bilm_keras.cli._common import (
    add_precision_argument,
    field_default,
    int_in_range,
)
from bilm_keras.cli._model_flags import SPEC_HELP, model_spec
from bilm_keras.options import BiLMOptions
from bilm_keras.training.training_run import (
    INT_RANGES,
    SOFTMAX_BIASES,
    SettingConflict,
    TrainingRun,
)

#: the default of a :class:`TrainingRun` field: the flag's
_default = functools.partial(field_default, TrainingRun)


def _int_setting(name: str) -> dict:
    """The ``type`` and ``default`` of the flag of an integer field of
    :class:`TrainingRun`: its range and its default, both the field's."""
    return dict(type=int_in_range(*INT_RANGES[name]), default=_default(name))


@dataclasses.dataclass(frozen=True)
class TrainJob:
    """What ``bilm-keras train`` or ``restart`` runs, checked once by the
    command's ``check``, which leaves ``args`` as given.

    Attributes:
        run: TrainingRun. The run's settings, ``--init_model``'s weight
            file resolved.
        options: BiLMOptions or None. The model ``train`` trains: a
            preset's, a published model's, a checkpoint's or the converted
            options of a Paddle checkpoint. None for ``restart``, which
            reads its save_dir's.
    """

    run: TrainingRun
    options: Optional[BiLMOptions] = None


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds bilm-tf's training flags to ``parser``."""
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--train_prefix", required=True,
                        help="Prefix (glob) for train files")
    parser.add_argument("--n_gpus", **_int_setting("n_gpus"),
                        help="GPUs to use, 0 = the CPU (default: all "
                             "visible)")
    parser.add_argument("--batch_size", **_int_setting("batch_size"),
                        help="global batch, split over the replicas "
                             "(default: the options')")
    parser.add_argument("--n_epochs", **_int_setting("n_epochs"),
                        help="epochs to train (default: the options')")
    parser.add_argument("--n_train_tokens", **_int_setting("n_train_tokens"),
                        help="tokens per epoch (default: counted from the "
                             "corpus)")
    parser.add_argument("--save_every", **_int_setting("save_every"),
                        help="steps between checkpoints")
    parser.add_argument("--log_every", **_int_setting("log_every"),
                        help="steps between progress lines")
    parser.add_argument("--seed", **_int_setting("seed"),
                        help="initialisation, data-order and dropout seed, "
                             "0..2**32-1 (default: random)")
    parser.add_argument("--intra_op_threads",
                        **_int_setting("intra_op_threads"),
                        help="threads per TensorFlow op, 0 = TensorFlow's "
                             "default (default: half the cores when no GPU "
                             "is visible)")
    parser.add_argument("--inter_op_threads",
                        **_int_setting("inter_op_threads"),
                        help="TensorFlow ops run at a time, 0 = "
                             "TensorFlow's default (default: 2 when no GPU "
                             "is visible)")
    parser.add_argument("--max_steps", **_int_setting("max_steps"),
                        help="stop after at most this many steps of this "
                             "run, with a checkpoint (restart continues "
                             "it), e.g. to fit a job's time limit "
                             "(default: every step of n_epochs)")
    add_precision_argument(
        parser, training=True, computes="the model's products",
        note="weights and accumulators stay float32",
        default=_default("precision"))


def training_run(args: argparse.Namespace) -> TrainingRun:
    """The run those flags describe, checked: a bad value is an error that
    names its field, the flag's name. Each flag named as a field sets it."""
    settings = {field.name: getattr(args, field.name)
                for field in dataclasses.fields(TrainingRun)
                if hasattr(args, field.name)}
    if hasattr(args, "init_model"):  # train's, not restart's
        # --init_model: its weight file, once fetched; its SPEC until then
        settings["init_weights"] = args.init_weights or args.init_model
    return TrainingRun(**settings)


def check_run_flags(args: argparse.Namespace, parser) -> None:
    """The run's settings, checked by :class:`TrainingRun` alone; a bad
    one is a usage error naming its flags (``parser.error``)."""
    try:
        training_run(args)
    except SettingConflict as e:
        if e.role is None:
            parser.error(f"give either --{e.other} or --{e.field}, not "
                         "both")
        parser.error(f"--{e.field} is {e.role} of --{e.other}; give "
                     f"--{e.other}")
    except SettingError as e:
        parser.error(f"--{e.field}: {e.reason}")


def add_adaptation_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the domain-adaptation flags (``train_elmo.py`` only: a restart
    continues its checkpoint, warm-up included)."""
    group = parser.add_argument_group(
        "domain adaptation",
        "continue training a published biLM on your own text: by name "
        "(--init_model), or from its files (--options and --init_weights: "
        "bilm-tf / AllenNLP options.json + lm_weights.hdf5)",
    )
    group.add_argument(
        "--init_model", type=model_spec, default=None, metavar="SPEC",
        help=f"start from {SPEC_HELP}; its options and weights (instead "
        "of --options and --init_weights); the softmax is new, for "
        "--vocab_file")
    group.add_argument(
        "--init_weights", default=_default("init_weights"),
        metavar="LM_WEIGHTS_HDF5",
        help="start the char-CNN / token embedding and both LSTM stacks "
        "from this lm_weights.hdf5 (--options must describe the same "
        "model; n_characters 261 or 262); the softmax is new, for "
        "--vocab_file")
    group.add_argument(
        "--init_checkpoint", default=_default("init_checkpoint"),
        metavar="SAVE_DIR",
        help="start from a bilm-tf training checkpoint instead (its "
        "save_dir, e.g. with the published model.ckpt-935588.*): the "
        "char-CNN / token embedding and both LSTM stacks, and the softmax "
        "rows of the words --init_vocab_file shares with --vocab_file; "
        "--options defaults to the save_dir's options.json (its "
        "n_train_tokens dropped: counted from --train_prefix)")
    group.add_argument(
        "--init_vocab_file", default=_default("init_vocab_file"),
        metavar="VOCAB_FILE",
        help="with --init_checkpoint: the vocabulary it was trained with "
        "(a save_dir holds none); without it the softmax is new")
    group.add_argument(
        "--freeze_lm_steps", **_int_setting("freeze_lm_steps"), metavar="N",
        help="with --init_model, --init_weights or --init_checkpoint: the "
        "first N steps train only the softmax, so that the pretrained "
        "LSTMs never see a random softmax's gradients (default "
        "%(default)s)")
    group.add_argument(
        "--softmax_bias", choices=SOFTMAX_BIASES,
        default=_default("softmax_bias"),
        help="with --init_model, --init_weights or --init_checkpoint: the "
        "new softmax rows' bias: the log frequency of each word as a target "
        "in --train_prefix (default; one pass over the corpus) or zeros "
        "(bilm-tf)")

