"""The flags that name a published model (``embed --model``, ``dump-tokens
--model``, ``export-hub --model``, ``train --init_model``), defined once.

A SPEC is what :func:`bilm_keras.pretrained.resolve_model` takes: a
registry name (``bilm-keras models`` lists them), an http(s) URL of an
archive, a local archive or a model directory. Its kind is checked when
the flags are parsed (:func:`model_spec`), with no network and nothing
read. The model is resolved (downloaded, converted, cached) in the
command's ``check``. That comes after the cheap checks of its other inputs
and before TensorFlow is imported.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Optional

from bilm_keras.cli._common import CommandError

if TYPE_CHECKING:
    from bilm_keras.weights.model_detection import DetectedModel

#: the help of a SPEC (after what the flag does)
SPEC_HELP = ("a published model: a name (`bilm-keras models` lists them), "
             "an http(s) URL of a model archive, a local archive (.zip, "
             ".tar.gz, .tar.bz2) or a model directory; downloaded (and an "
             "ELMoForManyLangs model converted) once into $BILM_KERAS_CACHE")


def model_spec(text: str) -> str:
    """An argparse ``type``: a model SPEC of a kind
    :func:`~bilm_keras.pretrained.check_model_spec` accepts (an unknown
    name is one line that says how to list the names)."""
    from bilm_keras.pretrained import PretrainedModelError, check_model_spec

    try:
        check_model_spec(text)
    except PretrainedModelError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_model_argument(parser, *, what: str) -> None:
    """``--model SPEC`` (``what``: what it replaces, for the help)."""
    parser.add_argument("--model", type=model_spec, default=None,
                        metavar="SPEC",
                        help=f"{SPEC_HELP} (instead of {what})")


def check_model_flags(args, parser, *, files=("options_file",
                                              "weight_file")) -> None:
    """``--model`` or both ``files`` flags, not both, as usage errors."""
    given = [f"--{name}" for name in files
             if getattr(args, name, None) is not None]
    if args.model is not None and given:
        parser.error(f"give either --model or {' and '.join(given)}, not "
                     "both")
    if args.model is None and len(given) < len(files):
        parser.error("the following arguments are required: --model, or "
                     + " and ".join(f"--{name}" for name in files))


def resolve_model_flag(spec: str, flag: str):
    """The model of ``flag``'s SPEC, fetched into the cache if needed
    (:class:`~bilm_keras.pretrained.ResolvedModel`).

    Raises:
        CommandError: ``FLAG: what went wrong`` in one line. It covers an
            unknown name, a failed or cut-short download, an unsafe
            archive, and a model that cannot be converted. Nothing is left
            in the cache.
    """
    from bilm_keras.pretrained import PretrainedModelError, resolve_model

    try:
        return resolve_model(spec)
    except PretrainedModelError as e:
        raise CommandError(f"{flag}: {e}") from None


@dataclasses.dataclass(frozen=True)
class ModelJob:
    """A command's checked flags (read, never changed) and the model files
    they come to: ``--model``'s resolved into the cache (its vocabulary
    where the flags give none), or the flags' own.

    ``save_dir_model`` is ``export-hub --save_dir``'s run and its
    checkpoint, a :class:`~bilm_keras.weights.model_detection.
    DetectedModel` detected once by its check, else None.
    """

    args: argparse.Namespace
    options_file: Optional[str]
    weight_file: Optional[str]
    vocab_file: Optional[str]
    save_dir_model: Optional[DetectedModel] = None


def model_job(args, model=None) -> ModelJob:
    """The job of ``args``: the files of ``model`` (a
    :class:`~bilm_keras.pretrained.ResolvedModel`, ``--model``'s) or, with
    none, of the flags ``--options_file``, ``--weight_file`` and
    ``--vocab_file``."""
    vocab_file = getattr(args, "vocab_file", None)
    if model is None:
        return ModelJob(args, args.options_file, args.weight_file,
                        vocab_file)
    return ModelJob(args, model.options_file, model.weight_file,
                    vocab_file if vocab_file is not None
                    else model.vocab_file)
