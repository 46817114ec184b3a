"""The ``bilm-keras`` command: one program, a subcommand per task.

::

    bilm-keras --help
    bilm-keras embed --model elmo-original --dataset_file sentences.txt \\
        --outfile elmo.hdf5 --average
    bilm-keras embed --options_file options.json --weight_file weights.hdf5 \\
        --dataset_file sentences.txt --outfile elmo.hdf5 --average

Each subcommand is a module of this package with:

* ``NAME``, ``HELP``, ``DESCRIPTION`` and ``EPILOG``.
* ``add_arguments(parser)``.
* ``check(args)``: the inputs, checked before TensorFlow is imported.
* ``run(args)``: the one library call.

``check`` never changes ``args``. A command that resolves something, such
as ``--model``'s files, a default preset or a published model's weights,
returns its job instead. The job is an immutable value of everything
checked, and ``run(job)`` executes it. The jobs are
:class:`~bilm_keras.cli.embed.EmbedJob`,
:class:`~bilm_keras.cli._training_flags.TrainJob`,
:class:`~bilm_keras.cli._model_flags.ModelJob` and
:class:`~bilm_keras.cli._common.SaveDirJob`. A job carries what its check
found, such as a save_dir's checkpoint family, so it is found once.

A subcommand may also have:

* ``check_flags(args, parser)``: flag combinations, reported with
  ``parser.error``.
* ``take_unknown_arguments(args, unknown)``: flags the command hands on,
  e.g. ``embed --runner``'s to Beam. False makes them an error as usual.
* ``NEEDS_TENSORFLOW``: False, or a function of ``args``.
* ``FLAGS``: the flag of a library setting whose name is not the flag's,
  e.g. ``{"mix_weights": "--mix"}``.

``bin/*.py`` are aliases of the subcommands with bilm-tf's script names and
flags. All argparse code lives in this package.

Nothing is written before ``run``. Every numeric flag has a range type
from :mod:`._common`: ``positive_int``, ``non_negative_int``,
``seed_int``, ``int_in_range`` or ``finite_float``. So argparse rejects a
bad value in one line naming the flag, the value and what is allowed. A
value that depends on an input file, such as ``--layers`` against the
options' layers, is checked in ``check``. An output file goes through
``check_output_file(path, flag, args.overwrite)`` with
``add_overwrite_argument(parser)``. ``tests/cli/test_flags.py`` holds a bad
value for every typed flag and fails for a new one without its row.

The parser imports no TensorFlow, Keras or numpy, so ``--help`` is
instant. A command imports them only after its arguments are parsed and
its inputs checked. It silences TensorFlow's start-up lines unless
``--verbose``.

Errors and exit statuses:

* Every bad input is one line on stderr, ``PROG: error: MESSAGE``, and
  exit status 1 (``EXIT_BAD_INPUT``). Bad inputs are:

  - a flag's value, e.g. ``argument --n_epochs: expected an integer >= 1,
    found 0``.
  - flags that do not go together, and an unknown flag.
  - a missing, empty or non-UTF-8 input, with file and line named.
  - bad options, and a weight file of the wrong shape. The project's
    errors are ``ValueError``\\ s, plus ``OSError``.
  - a library setting out of range, shown as its flag's error. A
    :class:`~bilm_keras._utils.settings.SettingError` names its field.

  The usage block is printed only with ``--help``, and above the line for
  a missing required flag or command.
* 0 is done and 130 interrupted (Ctrl-C). 70 (``EXIT_INTERNAL_ERROR``) is
  an unexpected error, printed with Python's traceback: a bug to report.
  ``--verbose`` adds the traceback to a bad input's line.
* ``train`` and ``restart`` stopped by a signal after their first step
  write a checkpoint of the step reached. They print one line naming it
  and the command that continues the run
  (:mod:`bilm_keras.training.preemption`). The exit is 143 after SIGTERM,
  which a scheduler takes for "preempted", and 130 after SIGINT.
* A disk or quota that fills up is a bad input too. It is one line naming
  the file, the bytes it needed where known and the space free, and
  exit 1 (:class:`~bilm_keras._utils.disk_full.DiskFullError`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from typing import List, Optional

from bilm_keras._utils.console_log import (
    restore_console_level,
    set_console_level,
)
from bilm_keras._utils.settings import SettingError
from bilm_keras._utils.version import __version__
from bilm_keras.cli import (
    build_vocab,
    convert_manylangs,
    convert_paddle,
    convert_tfhub,
    dump_tokens,
    dump_weights,
    embed,
    evaluate,
    export_hub,
    merge_embeddings,
    models,
    pipeline,
    restart,
    serve,
    train,
)
from bilm_keras.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL_ERROR,
    ArgumentParser,
    CommandError,
    HelpFormatter,
    import_tensorflow,
)

PROG = "bilm-keras"

#: the subcommands, in the order ``--help`` lists them
COMMANDS = (embed, models, merge_embeddings, dump_tokens, build_vocab,
            train, restart, evaluate, dump_weights, export_hub,
            convert_manylangs, convert_paddle, convert_tfhub, pipeline,
            serve)
COMMANDS_BY_NAME = {module.NAME: module for module in COMMANDS}

DESCRIPTION = """\
ELMo's bidirectional language model (bilm-tf, on TensorFlow 2 / Keras 3)
from the command line: embed text with a published biLM (`bilm-keras
models` lists them by name) or your own, or build a vocabulary, train,
test and export your own.

`bilm-keras COMMAND --help` shows a command's flags and examples."""
EPILOG = """\
embeddings from a published model (downloaded and cached on first use):
  bilm-keras embed --model elmo-original --dataset_file text.txt \\
      --outfile elmo.hdf5

a typical session:
  bilm-keras build-vocab --train_prefix 'corpus/train/*' --vocab_file vocab.txt
  bilm-keras train --train_prefix 'corpus/train/*' --vocab_file vocab.txt \\
      --save_dir ckpt/ --options small
  bilm-keras test --save_dir ckpt/ --vocab_file vocab.txt \\
      --test_prefix 'corpus/heldout/*'
  bilm-keras dump-weights --save_dir ckpt/ --outfile model/lm_weights.hdf5
  bilm-keras embed --options_file model/options.json \\
      --weight_file model/lm_weights.hdf5 --dataset_file text.txt \\
      --outfile elmo.hdf5"""


def _add_command_arguments(parser: ArgumentParser, module) -> None:
    module.add_arguments(parser)
    level = parser.add_mutually_exclusive_group()
    level.add_argument("--verbose", action="store_true",
                       help="show TensorFlow's start-up and log lines, "
                            "bilm_keras's debug lines, and the traceback of "
                            "an error")
    level.add_argument("--quiet", action="store_true",
                       help="show warnings and errors only (no progress "
                            "or result lines)")
    parser.set_defaults(_command=module, _parser=parser)


def build_parser(prog: str = PROG) -> ArgumentParser:
    """The ``bilm-keras`` parser, every subcommand included."""
    parser = ArgumentParser(
        prog=prog, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND",
                                     dest="command", required=True)
    for module in COMMANDS:
        sub = commands.add_parser(
            module.NAME, help=module.HELP, description=module.DESCRIPTION,
            epilog=module.EPILOG, formatter_class=HelpFormatter)
        _add_command_arguments(sub, module)
    return parser


def build_command_parser(command: str,
                         prog: Optional[str] = None
                         ) -> ArgumentParser:
    """One subcommand's parser on its own (the ``bin/`` aliases)."""
    module = COMMANDS_BY_NAME[command]
    parser = ArgumentParser(
        prog=prog or f"{PROG} {command}", description=module.DESCRIPTION,
        epilog=module.EPILOG, formatter_class=HelpFormatter)
    _add_command_arguments(parser, module)
    return parser


def parse_args(argv: Optional[List[str]] = None, *,
               command: Optional[str] = None,
               prog: Optional[str] = None) -> argparse.Namespace:
    """Parses ``argv`` (default ``sys.argv[1:]``) and checks flag
    combinations. A bad flag exits 1 (``EXIT_BAD_INPUT``) after one line.

    Args:
        command: parse the flags of this subcommand alone (no subcommand
            name in ``argv``), as the ``bin/`` aliases do.
        prog: the program name shown in help and errors.
    """
    if command is None:
        parser = build_parser(prog or PROG)
    else:
        parser = build_command_parser(command, prog)
    args, unknown = parser.parse_known_args(argv)
    take_unknown = getattr(args._command, "take_unknown_arguments", None)
    if unknown and (take_unknown is None
                    or not take_unknown(args, unknown)):
        # argparse's own error for them, from the parser argparse uses
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    check_flags = getattr(args._command, "check_flags", None)
    if check_flags is not None:
        check_flags(args, args._parser)
    return args


def execute(args: argparse.Namespace):
    """Checks the inputs, imports TensorFlow (quietly, unless
    ``--verbose``) if the command needs it, and runs the command.

    Returns:
        The command's result (the library call's).
    """
    module = args._command
    # the library's lines (bilm_keras._utils.console_log): --quiet keeps
    # warnings only, --verbose adds debug lines; as before afterwards
    previous = set_console_level(verbose=args.verbose, quiet=args.quiet)
    try:
        job = module.check(args)
        needs = getattr(module, "NEEDS_TENSORFLOW", True)
        if callable(needs):  # depends on the flags (embed --runner)
            needs = needs(args)
        if needs:
            before = getattr(module, "before_tensorflow", None)
            if before is not None:
                before(args)
            import_tensorflow(verbose=args.verbose)
        return module.run(args if job is None else job)
    except SettingError as e:
        raise _as_flag_error(e, module, args._parser) from e
    finally:
        restore_console_level(previous)


def _as_flag_error(error: SettingError, module, parser) -> CommandError:
    """A library setting's error as the flag's: ``--FLAG: REASON``.

    The field is the flag's name (``--layers``), unless the command's
    ``FLAGS`` maps it to another (``mix_weights`` -> ``--mix``). A field
    that is no flag of the command keeps its own name.
    """
    flag = getattr(module, "FLAGS", {}).get(error.field, f"--{error.field}")
    if flag not in parser._option_string_actions:
        return CommandError(str(error))
    return CommandError(f"{flag}: {error.reason}")


def run(argv: Optional[List[str]] = None, *, command: Optional[str] = None,
        prog: Optional[str] = None):
    """Parses and runs a command, raising its errors, for programs and
    tests. Returns the command's result."""
    return execute(parse_args(argv, command=command, prog=prog))


def main(argv: Optional[List[str]] = None, *, command: Optional[str] = None,
         prog: Optional[str] = None) -> int:
    """Parses and runs a command as a program: a bad input is one line on
    stderr.

    Returns the exit status: 0 done, 1 bad input, 130 interrupted, 143
    stopped by SIGTERM with a checkpoint, 70 an unexpected error. The
    parser exits 1 itself for a bad flag."""
    from bilm_keras.training.preemption import TrainingPreempted

    args = parse_args(argv, command=command, prog=prog)
    name = args._parser.prog
    try:
        execute(args)
    except TrainingPreempted as e:  # a checkpoint of the step reached
        # the job is over: a further signal (a scheduler's repeat, Ctrl-C
        # again) must not turn the exit status into a kill's
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        restart = ("restart.py" if name.endswith(".py")
                   else f"{name.split()[0]} restart")
        print(f"{name}: {e.message(restart)}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:
        if args.verbose:
            traceback.print_exc()
        message = str(e) or type(e).__name__
        print(f"{name}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:  # not the input's fault: show where, for a report
        traceback.print_exc()
        print(f"{name}: internal error (a bug: please report it with the "
              f"traceback above)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return 0


def console_main() -> None:
    """The ``bilm-keras`` console script."""
    sys.exit(main())
