"""Pieces every subcommand shares: the help layout, flag types, input
checks that run before TensorFlow is imported, and that import itself
(quiet unless ``--verbose``).

Nothing here imports TensorFlow, Keras or numpy at import time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import math
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Optional

from bilm_keras._utils.cpu_settings import running_settings
from bilm_keras._utils.fast_precision import DEFAULT_PRECISION, PRECISIONS
from bilm_keras.options import OPTIONS_FILE

if TYPE_CHECKING:
    from bilm_keras.weights.model_detection import DetectedModel


#: the exit status of every bad input: a flag's value, a combination of
#: flags, a missing or bad input file (one line, ``PROG: error: ...``).
#: as bilm-tf's scripts do, a bad input exits 1.
EXIT_BAD_INPUT = 1
#: what is not the input's fault (an unexpected error, printed with its
#: traceback: a bug to report); sysexits.h's EX_SOFTWARE
EXIT_INTERNAL_ERROR = 70


class CommandError(ValueError):
    """A bad input found by a command's checks (printed as one line)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with every error one line:
    ``PROG: error: MESSAGE``, exit :data:`EXIT_BAD_INPUT`.

    argparse prints its usage block before every error. Here the usage
    comes only where it is what the user needs: a required flag or the
    command missing, and ``--help``. A bad value such as ``argument
    --n_epochs: expected an integer >= 1, found 0``, an unknown flag or
    two flags that exclude each other are one line.
    """

    def error(self, message):
        if message.startswith("the following arguments are required"):
            self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and shows each option's default.

    A default is shown when there is one to show: not for required flags,
    switches (``store_true``, ``store_const``) or ``None``.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if ("%(default)" in text or action.required
                or not action.option_strings
                or action.default in (None, False, argparse.SUPPRESS)
                or isinstance(action, argparse._StoreConstAction)):
            return text
        return f"{text} (default: %(default)s)"


def field_default(value_class, name: str):
    """The default of ``value_class``'s field ``name``: a flag's default,
    written once, in the settings value that owns it."""
    for field in dataclasses.fields(value_class):
        if field.name == name:
            if field.default_factory is not dataclasses.MISSING:
                return field.default_factory()
            return field.default
    raise AttributeError(f"{value_class.__name__} has no field {name!r}")


def int_in_range(minimum: int, maximum: Optional[int] = None,
                 allowed: Optional[str] = None):
    """An argparse ``type``: an integer in ``minimum..maximum``.

    A bad value is one line from :class:`ArgumentParser`, exit 1. It
    names the flag, which argparse adds, what is allowed and what was
    found: ``argument --batch_size: expected an integer >= 1, found -4``.

    Args:
        maximum: the largest value allowed. None means no limit.
        allowed: what to say is expected. The default is the range.
    """
    if allowed is None:
        allowed = (f"an integer >= {minimum}" if maximum is None
                   else f"an integer in {minimum}..{maximum}")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {allowed}, found {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(
                f"expected {allowed}, found {value}")
        return value

    return parse


#: an integer >= 1: sizes, counts of epochs and steps, intervals
positive_int = int_in_range(1)
#: an integer >= 0: a count that may be zero (steps, GPUs, layer indices)
non_negative_int = int_in_range(0)
#: a random seed: NumPy and ``keras.utils.set_random_seed`` take 0..2**32-1
seed_int = int_in_range(0, 2**32 - 1)


def finite_float(text: str) -> float:
    """An argparse ``type``: a real number, not ``nan`` or ``inf``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number, found {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(
            f"expected a finite number, found {text!r}")
    return value


def options_arg(text: str) -> str:
    """An argparse ``type``: an options JSON file, or a preset's name
    given as the preset's file. The presets of :mod:`bilm_keras.presets`
    are ``tiny``, ``small`` and the published size. A bare name that is no
    preset is refused here. A path is checked with the other inputs by
    :func:`check_options_flag`."""
    from bilm_keras.presets import PresetError, options_file

    try:
        return options_file(text)
    except PresetError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def check_file(path: str, flag: str) -> None:
    """``path`` (given as ``flag``) is an existing file."""
    if os.path.isdir(path):
        raise CommandError(f"{flag} {path}: is a directory, expected a file")
    if not os.path.isfile(path):
        raise CommandError(f"{flag} {path}: no such file")


def check_dir(path: str, flag: str) -> None:
    """``path`` (given as ``flag``) is an existing directory."""
    if not os.path.exists(path):
        raise CommandError(f"{flag} {path}: no such directory")
    if not os.path.isdir(path):
        raise CommandError(f"{flag} {path}: is a file, expected a directory")


def check_save_dir(path: str, flag: str = "--save_dir") -> None:
    """``path`` is a training directory (``bilm-keras train`` wrote its
    ``options.json`` there, beside the checkpoints)."""
    check_dir(path, flag)
    if not os.path.isfile(os.path.join(path, OPTIONS_FILE)):
        raise CommandError(
            f"{flag} {path}: not a training directory (no options.json; "
            "expected the --save_dir of `bilm-keras train`)")


def detect_save_dir(path: str, checkpoint: Optional[str] = None,
                    flag: str = "--save_dir") -> DetectedModel:
    """The trained run a reading command's ``path`` names, and who wrote
    it, detected once here for the library call to take
    (:func:`~bilm_keras.weights.model_detection.detect_model`; its
    ``checkpoint``, ``--checkpoint``).

    A Paddle checkpoint passes: a persistables directory, a PaddleNLP
    ``.pdparams`` or its run's save_dir, which the command reads as one.
    Any other ``path`` must pass :func:`check_save_dir`.

    Raises:
        CommandError: neither, or a model that is no training run.
        CheckpointFileError: a save_dir whose checkpoint does not read.
        PaddleFormatError: a folder of several ``.pdparams``, none of them
            ``final`` or a step number.
        SettingError: no checkpoint of that name, for ``--checkpoint``.
    """
    from bilm_keras.weights.model_detection import (
        ModelDetectionError,
        detect_model,
    )

    try:
        model = detect_model(path, checkpoint=checkpoint)
    except ModelDetectionError:
        check_save_dir(path, flag)  # the flag's own words, where they fit
        raise
    if not model.is_paddle:
        check_save_dir(path, flag)
    if not model.is_run:
        raise CommandError(
            f"{flag} {path}: expected a training run (ours, bilm-tf's or a "
            f"Paddle checkpoint), found a {model.family} model")
    return model


@dataclasses.dataclass(frozen=True)
class SaveDirJob:
    """What a command that reads ``--save_dir`` runs (``test``,
    ``dump-weights``), checked once by its ``check``.

    Attributes:
        args: argparse.Namespace. The flags as given, never changed.
        model: DetectedModel. ``--save_dir``'s run and its checkpoint,
            from :func:`detect_save_dir`.
    """

    args: argparse.Namespace
    model: DetectedModel


def add_checkpoint_argument(parser, what: str) -> None:
    """The ``--checkpoint`` flag of a command that reads a save_dir's
    checkpoint (``what`` it does with it)."""
    parser.add_argument(
        "--checkpoint", default=None, metavar="NAME",
        help=f"the checkpoint of --save_dir to {what}, e.g. model-200 or "
             "bilm-tf's model.ckpt-40 (default: the newest; one that does "
             "not read whole is named)")


def check_checkpoint(save_dir: str, name) -> None:
    """``--checkpoint NAME`` names a checkpoint of ``save_dir``. It needs
    no TensorFlow. Whether it reads whole is the library's check."""
    if name is None:
        return
    from bilm_keras.weights.checkpoint_files import resolve_checkpoint

    resolve_checkpoint(save_dir, name)  # SettingError: --checkpoint's


def check_output_file(path: str, flag: str, overwrite: bool) -> None:
    """``path`` (given as ``flag``) may be written: not a directory, and
    not an existing file unless ``overwrite`` (``--overwrite``).

    A command calls this in ``check(args)``, before TensorFlow and the
    hours of work that end in writing ``path``.
    """
    if os.path.isdir(path):
        raise CommandError(f"{flag} {path}: is a directory, expected a "
                           "file name")
    if os.path.lexists(path) and not overwrite:
        raise CommandError(f"{flag} {path}: file exists (pass --overwrite "
                           "to replace it)")


def add_precision_argument(parser, *, training: bool, computes: str,
                           note: str = "",
                           default: str = DEFAULT_PRECISION) -> None:
    """The ``--precision`` flag: what ``computes``, the model's or the
    saved graph's products, compute in. ``training`` offers the Keras
    mixed policies, ``mixed_bfloat16`` and ``mixed_float16`` with loss
    scaling, rather than the embedding precisions ``bfloat16`` and
    ``float16``. ``note`` is what else the command's help says.
    ``default`` is the settings value's."""
    reduced = "mixed_bfloat16" if training else "bfloat16"
    half = "mixed_float16" if training else "float16"
    choices = [p for p in PRECISIONS
               if p == DEFAULT_PRECISION or p.startswith("mixed_") == training]
    parser.add_argument(
        "--precision", default=default, choices=choices,
        help=f"what {computes} compute in: float32 (exact, the default), "
             f"{reduced} (AMX CPUs, GPUs of compute capability 8.0+) or "
             f"{half} (GPUs of 7.0+{', loss scaling' if training else ''})"
             f"{'; ' + note if note else ''} (docs/performance.md, "
             "Precision)")


def given_flags(args, *names: str) -> dict:
    """``{name: value}`` of the flags among ``names`` the user gave: a
    flag whose default is ``argparse.SUPPRESS`` leaves the library
    function's own default, written once there."""
    return {name: getattr(args, name) for name in names
            if hasattr(args, name)}


def add_overwrite_argument(
        parser, text: str = "replace --outfile if it exists") -> None:
    """The ``--overwrite`` switch of a command that writes a file, for
    :func:`check_output_file`. ``text`` is its help."""
    parser.add_argument("--overwrite", action="store_true",
                        help=f"{text} (default: refuse)")


def add_outdir_arguments(parser, writes: str) -> None:
    """The ``--outdir`` a converter writes (``writes``: the files it holds
    then) and the ``--overwrite`` switch that lets it replace a non-empty
    one (the converter's own check, with its file named)."""
    parser.add_argument("--outdir", required=True,
                        help=f"Directory to write ({writes})")
    parser.add_argument("--overwrite", action="store_true",
                        help="Replace a non-empty --outdir")


def check_glob(pattern: str, flag: str) -> None:
    """At least one file matches ``pattern`` (given as ``flag``)."""
    if not any(os.path.isfile(p) for p in glob.glob(pattern)):
        raise CommandError(
            f"{flag} {pattern!r}: no file matches (expected a glob of text "
            "files, one tokenized sentence per line; quote it)")


def check_options(path: str, flag: str):
    """Parses ``options.json`` without TensorFlow and returns the
    options."""
    from bilm_keras.options import BiLMOptions

    check_file(path, flag)
    return BiLMOptions.from_json(path)  # OptionsError names file and field


def check_options_flag(path: str, flag: str = "--options"):
    """:func:`check_options` of an :func:`options_arg` flag: a missing file
    also names the presets (``--options small``: the file
    ``options/small.json`` is only in a checkout)."""
    from bilm_keras.presets import preset_names

    if not os.path.exists(path):
        raise CommandError(f"{flag} {path}: no such file (expected an "
                           f"options.json, or a preset: {preset_names()})")
    return check_options(path, flag)


def check_run_options(options, path: str, args) -> None:
    """Checks that the training sizes of ``options``, read from ``path``,
    that no flag of ``args`` overrides are >= 1, as the flags' own types
    require. An ``options.json`` with ``"n_epochs": 0`` would train
    nothing. A negative batch fails only in TensorFlow, after ``save_dir``
    is written."""
    for name in ("batch_size", "n_epochs", "n_train_tokens",
                 "unroll_steps", "n_negative_samples_batch"):
        if getattr(args, name, None) is not None:
            continue  # the flag's value is used; its type checked it
        value = getattr(options, name)
        if value is not None and value < 1:
            hint = f" (or give --{name})" if hasattr(args, name) else ""
            raise CommandError(f"{path}: field '{name}': expected an "
                               f"integer >= 1, found {value}{hint}")


def import_tensorflow(verbose: bool = False) -> None:
    """Imports TensorFlow and Keras, silencing their start-up lines.

    TensorFlow's C++ libraries write their start-up lines about oneDNN,
    CUDA and CPU features to the stderr file descriptor while they load.
    That is before ``TF_CPP_MIN_LOG_LEVEL`` is read. So the descriptor
    itself is pointed at a temporary file for the import, and its text is
    shown if the import fails. Later C++ log lines stay hidden through
    ``TF_CPP_MIN_LOG_LEVEL=3``, unless the environment sets it. Even its
    "errors" there are chatter, e.g. no CUDA driver or a kernel falling
    back to Eigen. Real failures reach Python as exceptions.
    ``verbose`` changes nothing and shows everything, and prints the CPU
    class's oneDNN setting (:mod:`bilm_keras._utils.cpu_settings`).
    """
    if verbose or "tensorflow" in sys.modules:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
        if verbose:
            print(running_settings(), file=sys.stderr)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with stderr_replayed_on_failure():
        import keras  # noqa: F401
        import tensorflow  # noqa: F401


@contextlib.contextmanager
def stderr_replayed_on_failure(expected: tuple = ()):
    """Points the stderr file descriptor at a temporary file while the
    block runs, hiding what C++ libraries and child processes write there.
    If the block fails with anything but ``expected``, a bad input's own
    one-line error, the hidden text is written to stderr before the error
    goes on. Without a usable stderr, it changes nothing."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable stderr
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except expected:
            raise
        except BaseException:
            sys.stderr.flush()
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
