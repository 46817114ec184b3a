"""Each default is written once, in the value or the function that owns
it: a flag that sets a field of a settings value (or a parameter of the
library call) its command makes has that field's default.

Every flag of every command is read from the parsers, so a new flag is
compared without a new row; a new command fails until it names what it
builds.
"""

import argparse
import dataclasses
import inspect

import pytest

from bilm_keras import cli


def _owners() -> dict:
    """``{command: the settings values and library functions it builds
    or calls}``, whose fields and parameters its flags set."""
    from bilm_keras.data.vocab_builder import build_vocab
    from bilm_keras.embedding.dump import dump_token_embeddings
    from bilm_keras.embedding.dump_plan import DumpSettings
    from bilm_keras.embedding.merge import merge_embedding_files
    from bilm_keras.embedding.outputs import EmbeddingSpec
    from bilm_keras.export.saved_model_export import (
        export_hub,
        export_hub_from_save_dir,
    )
    from bilm_keras.weights.tfhub_conversion import convert_tfhub
    from bilm_keras.serving.limits import ServeLimits
    from bilm_keras.serving.server import serve
    from bilm_keras.training.evaluation import evaluate
    from bilm_keras.training.pipeline import run_pipeline
    from bilm_keras.training.training_run import TrainingRun
    from bilm_keras.save_dirs.weight_dump import dump_weights
    from bilm_keras.weights.manylangs_conversion import convert_manylangs
    from bilm_keras.weights.paddle_conversion import convert_paddle

    return {
        "embed": [EmbeddingSpec, DumpSettings],
        "models": [],  # lists the registry and the cache: no settings
        "merge-embeddings": [merge_embedding_files],
        "dump-tokens": [dump_token_embeddings],
        "build-vocab": [build_vocab],
        "train": [TrainingRun],
        "restart": [TrainingRun],
        "test": [evaluate],
        "dump-weights": [dump_weights],
        "export-hub": [export_hub, export_hub_from_save_dir],
        "convert-manylangs": [convert_manylangs],
        "convert-paddle": [convert_paddle],
        "convert-tfhub": [convert_tfhub],
        "pipeline": [run_pipeline],
        "serve": [ServeLimits, serve],
    }


def _defaults(owner) -> dict:
    """``{field or parameter: its default}`` of those that have one."""
    if dataclasses.is_dataclass(owner):
        return {f.name: f.default for f in dataclasses.fields(owner)
                if f.default is not dataclasses.MISSING}
    return {name: p.default
            for name, p in inspect.signature(owner).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _flag_defaults(command: str):
    """``(flag, field name, default)`` of every flag of ``command`` that
    takes a value (a switch is absent or given, no field's value), and
    of every default the parser sets without a flag."""
    module = cli.COMMANDS_BY_NAME[command]
    fields = {flag: field
              for field, flag in getattr(module, "FLAGS", {}).items()}
    parser = cli.build_command_parser(command)
    for action in parser._actions:
        if (not action.option_strings or action.required
                or type(action) is not argparse._StoreAction
                # no default of its own: the library's, given only when
                # the flag is (``given_flags``)
                or action.default is argparse.SUPPRESS):
            continue
        flag = max(action.option_strings, key=len)
        yield flag, fields.get(flag, action.dest), action.default
    for dest, default in parser._defaults.items():
        yield f"set_defaults({dest}=)", dest, default


def test_every_command_names_what_it_builds():
    assert set(_owners()) == set(cli.COMMANDS_BY_NAME)


def _compare(command: str) -> tuple:
    """``(flags compared, flags whose default is not their field's)``."""
    compared, wrong = set(), []
    for flag, field, default in _flag_defaults(command):
        for owner in _owners()[command]:
            defaults = _defaults(owner)
            if field in defaults:
                compared.add(flag)
                if defaults[field] != default:
                    wrong.append(f"{flag} {default!r}: {owner.__name__}."
                                 f"{field} is {defaults[field]!r}")
    return compared, wrong


@pytest.mark.parametrize("command", sorted(cli.COMMANDS_BY_NAME))
def test_a_flags_default_is_its_fields(command):
    assert _compare(command)[1] == []


def test_the_comparison_reaches_the_settings():
    # the defaults once written in two places among them
    assert {"--save_every", "--log_every", "--freeze_lm_steps",
            "--softmax_bias", "--precision", "--n_gpus"} <= _compare(
        "train")[0]
    assert {"--save_every", "--log_every"} <= _compare("restart")[0]
    assert {"--chunk_size", "--precision", "--batch_size"} <= _compare(
        "embed")[0]
    assert {"--max_sentences", "--min_count", "--seed"} <= _compare(
        "pipeline")[0]
    assert {"--max_wait_ms", "--host", "--port", "--drain_timeout"} <= (
        _compare("serve")[0])


@pytest.mark.parametrize("command,flag,field", [
    ("test", "--batch_size", "batch_size"),
    ("build-vocab", "--min_count", "min_count"),
])
def test_a_flag_without_a_default_leaves_the_librarys(command, flag, field):
    # written once, in the function's signature: absent unless given
    argv = {"test": ["--save_dir", "s", "--vocab_file", "v",
                     "--test_prefix", "t"],
            "build-vocab": ["--train_prefix", "t", "--vocab_file", "v"]}
    args = cli.parse_args(argv[command], command=command)
    assert not hasattr(args, field)
    args = cli.parse_args(argv[command] + [flag, "7"], command=command)
    assert getattr(args, field) == 7
