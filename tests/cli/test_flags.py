"""Every numeric flag of every subcommand, and every output file, is checked
with the other inputs: before TensorFlow is imported and before anything
is written. A bad value is one line naming the flag, the value and what is
allowed, and exit status 1, as every bad input (no usage block).

The table of bad values must cover every flag the parsers give a ``type``
(their numeric flags), so a new flag without a row fails here. The
commands run in-process (``cli.main``), as ``bilm-keras COMMAND`` and as
their ``bin/`` alias; ``tests/cli/test_cli.py`` runs some of the same checks
in a fresh interpreter and finds no TensorFlow imported.
"""

import json
import pathlib
import re
import shlex
import shutil
import sys

import h5py
import numpy as np

import pytest

from bilm_keras import cli

ALIASES = {module.NAME: module.ALIAS for module in cli.COMMANDS}

# (command, flag, bad value, what the line says is allowed); every one exits
# 1 (cli.EXIT_BAD_INPUT), whether argparse finds it or a check against an
# input file (--layers 3 for a model of 2 LSTM layers)
BAD_VALUES = [
    ("embed", "--batch_size", "0", "an integer >= 1"),
    ("embed", "--batch_size", "two", "an integer >= 1"),
    ("embed", "--layers", "3", "indices in 0..2"),  # the options' layers
    ("embed", "--layers", "-1", "an integer >= 0"),
    ("embed", "--mix", "nan", "a finite number"),
    ("embed", "--mix", "0.5", "expected 3 values"),  # one per layer
    ("embed", "--mix_logits", "inf", "a finite number"),
    ("embed", "--gamma", "nan", "a finite number"),
    ("embed", "--chunk_size", "0", "an integer >= 1"),
    ("embed", "--shard", "3/3", "0 <= K < N"),
    ("embed", "--shard", "1-of-2", "K/N"),
    ("embed", "--devices", ",", "expected 'all' or devices"),
    ("build-vocab", "--min_count", "0", "an integer >= 1"),
    ("build-vocab", "--max_size", "2", "an integer >= 3"),
    ("train", "--n_gpus", "-1", "an integer >= 0"),
    ("train", "--batch_size", "-4", "an integer >= 1"),
    ("train", "--n_epochs", "0", "an integer >= 1"),
    ("train", "--n_epochs", "1.5", "an integer >= 1"),
    ("train", "--n_train_tokens", "0", "an integer >= 1"),
    ("train", "--save_every", "0", "an integer >= 1"),
    ("train", "--log_every", "-100", "an integer >= 1"),
    ("train", "--seed", "-1", "an integer in 0..4294967295"),
    ("train", "--seed", "4294967296", "an integer in 0..4294967295"),
    ("train", "--freeze_lm_steps", "-1", "an integer >= 0"),
    ("train", "--intra_op_threads", "-1", "an integer >= 0"),
    ("train", "--inter_op_threads", "two", "an integer >= 0"),
    ("train", "--freeze_lm_steps", "500", "expected 0 without init_weights"),
    ("train", "--max_steps", "0", "an integer >= 1"),
    ("restart", "--n_gpus", "-1", "an integer >= 0"),
    ("restart", "--batch_size", "0", "an integer >= 1"),
    ("restart", "--n_epochs", "0", "an integer >= 1"),
    ("restart", "--n_train_tokens", "-5", "an integer >= 1"),
    ("restart", "--save_every", "0", "an integer >= 1"),
    ("restart", "--log_every", "0", "an integer >= 1"),
    ("restart", "--seed", "-1", "an integer in 0..4294967295"),
    ("restart", "--intra_op_threads", "1.5", "an integer >= 0"),
    ("restart", "--inter_op_threads", "-2", "an integer >= 0"),
    ("restart", "--max_steps", "-1", "an integer >= 1"),
    ("test", "--batch_size", "0", "an integer >= 1"),
    ("pipeline", "--n_epochs", "0", "an integer >= 1"),
    ("pipeline", "--max_sentences", "0", "an integer >= 1"),
    ("pipeline", "--min_count", "0", "an integer >= 1"),
    ("pipeline", "--seed", "-1", "an integer in 0..4294967295"),
    ("serve", "--port", "65536", "an integer in 0..65535"),
    ("serve", "--max_batch_tokens", "0", "an integer >= 1"),
    ("serve", "--max_wait_ms", "-1", "an integer >= 0"),
    ("serve", "--max_concurrent_requests", "0", "an integer >= 1"),
    ("serve", "--max_sentences", "0", "an integer >= 1"),
    ("serve", "--max_tokens_per_sentence", "two", "an integer >= 1"),
    ("serve", "--max_request_bytes", "-1", "an integer >= 1"),
    ("serve", "--drain_timeout", "nan", "a finite number"),
    ("serve", "--model", "elmo-origina",
     "unknown model name (did you mean elmo-original"),
    # a model SPEC (checked without the network) and an options preset
    ("embed", "--model", "elmo-smal",
     "unknown model name (did you mean elmo-small"),
    ("embed", "--model", "ftp://example.org/elmo.zip",
     "expected an http:// or https:// URL"),
    ("dump-tokens", "--model", "manylangs-xx",
     "list the names with `bilm-keras models`"),
    ("export-hub", "--model", "no/such/model.zip",
     "no such file or directory (expected a registry name"),
    ("train", "--init_model", "elmo-origianl",
     "unknown model name (did you mean elmo-original"),
    ("train", "--options", "smal", "expected a preset name (tiny, small, "
     "elmo_2x4096_512_2048cnn_2xhighway) or an options JSON file"),
    ("pipeline", "--options", "tyni", "(did you mean tiny?)"),
]


def _numeric_flags():
    """(command, flag) of every action the parsers give a ``type``."""
    for module in cli.COMMANDS:
        for action in cli.build_command_parser(module.NAME)._actions:
            if action.type is not None:
                yield module.NAME, max(action.option_strings, key=len)


def test_the_table_covers_every_numeric_flag():
    assert {(c, f) for c, f, *_ in BAD_VALUES} == set(_numeric_flags())


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def inputs(model_dir, train_dir, tmp_path_factory):
    """Good inputs for every command, in a folder of their own."""
    root = tmp_path_factory.mktemp("flag_inputs")
    (root / "sentences.txt").write_text("a b\n", encoding="utf-8")
    (root / "ckpt").mkdir()  # a training directory, as the checks see one:
    (root / "ckpt" / "options.json").write_bytes(  # options, a checkpoint
        (model_dir / "options.json").read_bytes())
    for path in (FIXTURES / "bilm_tf_run" / "save_dir").glob(
            "model.ckpt-40.*"):
        shutil.copy(path, root / "ckpt")
    # one shard of a one-shard run, as `embed --shard 0/1` writes it
    with h5py.File(root / "part-0.hdf5", "w") as f:
        f.create_dataset("0", data=np.zeros((3, 2, 32), np.float32))
        index = f.create_dataset("sentence_to_index", (1,),
                                 dtype=h5py.string_dtype())
        index[0] = json.dumps({"a b": "0"})
        f.attrs.update(shard="0/1", n_shards=1, n_lines_total=1,
                       shard_lines=np.asarray([0, 1], np.int64),
                       run=json.dumps({"n_lines": 1, "chunk_size": 4096}),
                       run_id="0" * 16)
    return root


def _good_args(command, model_dir, train_dir, inputs, out):
    """Arguments that pass ``command``'s checks; outputs go to ``out``."""
    m, t, i = model_dir, train_dir, inputs
    model = ["--options_file", m / "options.json",
             "--weight_file", m / "lm_weights.hdf5"]
    training = ["--vocab_file", t / "vocab.txt",
                "--train_prefix", t / "data.txt"]
    args = {
        "embed": [*model, "--dataset_file", i / "sentences.txt",
                  "--outfile", out / "elmo.hdf5"],
        "dump-tokens": [*model, "--vocab_file", m / "vocab_test.txt",
                        "--outfile", out / "tokens.hdf5"],
        "build-vocab": ["--train_prefix", t / "data.txt",
                        "--vocab_file", out / "vocab.txt"],
        "train": [*training, "--save_dir", out / "ckpt",
                  "--options", m / "options.json"],
        "restart": [*training, "--save_dir", i / "ckpt"],
        "test": ["--save_dir", i / "ckpt", "--vocab_file", t / "vocab.txt",
                 "--test_prefix", t / "data.txt"],
        "dump-weights": ["--save_dir", i / "ckpt",
                         "--outfile", out / "model" / "lm_weights.hdf5"],
        "export-hub": [*model, "--outdir", out / "hub"],
        "pipeline": ["--out_dir", out / "run", "--corpus", t / "data.txt"],
        "merge-embeddings": ["--outfile", out / "all.hdf5",
                             i / "part-0.hdf5"],
        "convert-manylangs": ["--model_dir", inputs,
                              "--outdir", out / "converted"],
        "convert-tfhub": ["--module", inputs,
                          "--outdir", out / "converted"],
        "convert-paddle": ["--checkpoint", inputs,
                           "--vocab_file", t / "vocab.txt",
                           "--outdir", out / "converted"],
        "models": [],
        "serve": ["--model", m],
    }[command]
    return [str(a) for a in args]


def _tree(*roots):
    """Every path under ``roots``, with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns)
            for root in roots for p in root.rglob("*")}


@pytest.fixture
def no_tensorflow(monkeypatch):
    """Fails a command that gets past its checks (to import TensorFlow or
    to run)."""
    def ran(*args, **kwargs):
        raise AssertionError("the command got past its checks")

    monkeypatch.setattr(cli, "import_tensorflow", ran)
    for module in cli.COMMANDS:
        monkeypatch.setattr(module, "run", ran)
    before = set(sys.modules)
    yield
    assert not {m for m in set(sys.modules) - before
                if m.split(".")[0] in ("tensorflow", "keras")}


def _main(argv, command, alias):
    """``cli.main`` as ``bilm-keras COMMAND`` or as the ``bin/`` alias;
    returns the exit status and the program name errors show."""
    try:
        if alias:
            code = cli.main(argv, command=command, prog=ALIASES[command])
        else:
            code = cli.main([command, *argv])
    except SystemExit as e:  # usage errors, from argparse
        code = e.code
    return code, ALIASES[command] if alias else f"bilm-keras {command}"


@pytest.mark.slow
@pytest.mark.parametrize("alias", [False, True], ids=["command", "alias"])
@pytest.mark.parametrize("command,flag,value,allowed", BAD_VALUES)
def test_bad_numeric_flag_is_one_line_and_writes_nothing(
        model_dir, train_dir, inputs, tmp_path, monkeypatch, capsys,
        no_tensorflow, command, flag, value, allowed, alias):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)  # `pipeline` without --out_dir writes here
    argv = _good_args(command, model_dir, train_dir, inputs, out)
    argv += [flag, value]
    before = _tree(tmp_path, inputs)
    code, prog = _main(argv, command, alias)
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT == 1, err
    [line] = err.splitlines()  # one line: no usage block
    assert line.startswith(f"{prog}: error: "), line
    # the flag first (argparse says "argument --flag: "), then the value
    # and what is allowed
    assert re.match(rf"{re.escape(prog)}: error: (argument )?{flag}: ",
                    line), line
    assert value in line and allowed in line, line
    assert _tree(tmp_path, inputs) == before


# flags whose values name files, folders or checkpoints, checked against
# the inputs before TensorFlow: (command, flag, bad value, what the line
# says, other arguments the flag needs)
BAD_NAMES = [
    ("test", "--checkpoint", "model-999", "expected a checkpoint of", []),
    ("dump-weights", "--checkpoint", "model-999", "expected a checkpoint of",
     []),
    ("export-hub", "--checkpoint", "model-999", "expected a checkpoint of",
     ["--save_dir"]),
    ("train", "--init_checkpoint", "nowhere", "no such directory", []),
    ("train", "--init_vocab_file", "nowhere.txt", "no such file",
     ["--init_checkpoint"]),
]


@pytest.mark.parametrize("alias", [False, True], ids=["command", "alias"])
@pytest.mark.parametrize("command,flag,value,allowed,needs", BAD_NAMES)
def test_bad_name_flag_is_one_line_and_writes_nothing(
        model_dir, train_dir, inputs, tmp_path, capsys, no_tensorflow,
        command, flag, value, allowed, needs, alias):
    out = tmp_path / "out"
    out.mkdir()
    argv = _good_args(command, model_dir, train_dir, inputs, out)
    if "--save_dir" in needs:  # instead of the HDF5 files
        argv = ["--save_dir", str(inputs / "ckpt"), "--outdir",
                str(out / "hub")]
    if "--init_checkpoint" in needs:
        argv += ["--init_checkpoint", str(inputs / "ckpt")]
    argv += [flag, value]
    before = _tree(tmp_path, inputs)
    code, prog = _main(argv, command, alias)
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT == 1, err
    [line] = err.splitlines()
    assert re.match(rf"{re.escape(prog)}: error: {flag}[: ]", line), line
    assert value in line and allowed in line, line
    assert _tree(tmp_path, inputs) == before


@pytest.mark.parametrize("command", sorted(ALIASES))
def test_the_good_arguments_pass_the_checks(
        model_dir, train_dir, inputs, tmp_path, no_tensorflow, command):
    # the table's failures come from its bad values alone
    argv = _good_args(command, model_dir, train_dir, inputs, tmp_path)
    args = cli.parse_args([command, *argv])
    flags = dict(vars(args))
    args._command.check(args)
    assert _tree(tmp_path) == {}
    # what check resolves goes into its job: the flags stay as given
    assert vars(args) == flags


# ---------------------------------------------------------- output files
OUTPUTS = {"embed": "elmo.hdf5", "dump-tokens": "tokens.hdf5",
           "dump-weights": "model/lm_weights.hdf5",
           "merge-embeddings": "all.hdf5"}


@pytest.mark.parametrize("alias", [False, True], ids=["command", "alias"])
@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_an_existing_outfile_is_refused_unless_overwrite(
        model_dir, train_dir, inputs, tmp_path, capsys, no_tensorflow,
        command, alias):
    outfile = tmp_path / OUTPUTS[command]
    outfile.parent.mkdir(exist_ok=True)
    outfile.write_bytes(b"a day of work")
    argv = _good_args(command, model_dir, train_dir, inputs, tmp_path)
    before = _tree(tmp_path, inputs)
    code, prog = _main(argv, command, alias)
    assert code == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        f"{prog}: error: --outfile {outfile}: file exists (pass "
        "--overwrite to replace it)"]
    assert _tree(tmp_path, inputs) == before
    # --overwrite: the checks pass (the command would replace it)
    args = cli.parse_args([command, *argv, "--overwrite"])
    args._command.check(args)


def test_dump_weights_refuses_an_existing_options_json_beside_it(
        model_dir, train_dir, inputs, tmp_path, capsys, no_tensorflow):
    # e.g. --outfile in the save_dir, whose options.json is the training's
    argv = ["--save_dir", str(inputs / "ckpt"),
            "--outfile", str(inputs / "ckpt" / "lm_weights.hdf5")]
    before = _tree(inputs)
    code, prog = _main(argv, "dump-weights", alias=False)
    assert code == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        f"{prog}: error: --outfile {inputs / 'ckpt' / 'lm_weights.hdf5'}: "
        f"{inputs / 'ckpt' / 'options.json'} exists (written beside the "
        "weights; pass --overwrite to replace it)"]
    assert _tree(inputs) == before


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_a_directory_as_outfile_is_refused(
        model_dir, train_dir, inputs, tmp_path, capsys, no_tensorflow,
        command):
    argv = _good_args(command, model_dir, train_dir, inputs, tmp_path)
    outfile = tmp_path / OUTPUTS[command]
    outfile.mkdir(parents=True)
    code, _ = _main([*argv, "--overwrite"], command, alias=False)
    assert code == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.endswith(
        f"--outfile {outfile}: is a directory, expected a file name\n")


# ------------------------------------------------------- help's examples
def _printed_help(command):
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit):
        cli.main(argv)


def _examples(text):
    """The ``bilm-keras ...`` commands of a help text, continuation lines
    joined as a shell joins them."""
    joined, pending = [], ""
    for line in text.splitlines():
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        joined.append(pending.strip())
        pending = ""
    return [line for line in joined if line.startswith("bilm-keras ")]


@pytest.mark.parametrize("command", [None] + sorted(ALIASES))
def test_every_printed_example_parses(command, capsys):
    _printed_help(command)
    examples = _examples(capsys.readouterr().out)
    assert examples, f"no example in `bilm-keras {command} --help`"
    for example in examples:
        argv = shlex.split(example, comments=True)[1:]
        assert "..." not in argv, example
        if command is not None:
            assert argv[0] == command, example
        try:
            cli.parse_args(argv)
        except SystemExit:
            pytest.fail(f"example does not parse: {example}\n"
                        f"{capsys.readouterr().err}")


@pytest.mark.parametrize("command", [None] + sorted(ALIASES))
def test_every_printed_example_fits_a_terminal(command, capsys):
    # a continuation that lost its backslash in the source joins the
    # example into one line far wider than a terminal
    _printed_help(command)
    text = capsys.readouterr().out
    wide = [line for line in text.splitlines()
            if line.lstrip().startswith("bilm-keras ") and len(line) > 80]
    assert wide == []


# ------------------------------------------ the options' training sizes
@pytest.mark.parametrize("command", ["train", "restart"])
@pytest.mark.parametrize("field,value", [("n_epochs", 0),
                                         ("batch_size", -4),
                                         ("unroll_steps", 0)])
def test_options_sizes_out_of_range(model_dir, train_dir, tmp_path, capsys,
                                    no_tensorflow, command, field, value):
    # what the flags check, checked in the options.json they override
    options = json.loads((model_dir / "options.json").read_text())
    options[field] = value
    folder = tmp_path / "in"
    folder.mkdir()
    options_file = folder / "options.json"
    options_file.write_text(json.dumps(options))
    argv = _good_args(command, model_dir, train_dir, folder, tmp_path)
    if command == "train":
        argv[argv.index("--options") + 1] = str(options_file)
    else:
        argv[argv.index("--save_dir") + 1] = str(folder)
    before = _tree(tmp_path)
    code, prog = _main(argv, command, alias=False)
    hint = "" if field == "unroll_steps" else f" (or give --{field})"
    assert code == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        f"{prog}: error: {options_file}: field '{field}': expected an "
        f"integer >= 1, found {value}{hint}"]
    assert _tree(tmp_path) == before
    if field != "unroll_steps":  # the flag overrides the file's value
        args = cli.parse_args([command, *argv, f"--{field}", "2"])
        args._command.check(args)


def test_finite_float_for_the_float_flags():
    # no float flag yet: the type the first ones will use
    import argparse

    from bilm_keras.cli._common import finite_float

    assert finite_float("0.5") == 0.5 and finite_float("-2e-3") == -0.002
    for text, message in [("x", "expected a number, found 'x'"),
                          ("nan", "expected a finite number, found 'nan'"),
                          ("-inf", "expected a finite number, found "
                                   "'-inf'")]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            finite_float(text)


# ------------------------------------------- the usage block, and only
@pytest.mark.parametrize("alias", [False, True], ids=["command", "alias"])
def test_usage_only_when_a_required_flag_is_missing(capsys, alias):
    code, prog = _main(["--n_epochs", "1"], "train", alias)
    err = capsys.readouterr().err.splitlines()
    assert code == cli.EXIT_BAD_INPUT
    assert err[0].startswith(f"usage: {prog} ") and len(err) > 2
    assert err[-1] == (f"{prog}: error: the following arguments are "
                       "required: --save_dir, --vocab_file, --train_prefix")
    # no command at all: the program's synopsis, then the line
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    err = capsys.readouterr().err.splitlines()
    assert exit_.value.code == cli.EXIT_BAD_INPUT
    assert err[0].startswith("usage: bilm-keras")
    assert err[-1] == ("bilm-keras: error: the following arguments are "
                       "required: COMMAND")


@pytest.mark.parametrize("argv,line", [
    (["trian"], "bilm-keras: error: argument COMMAND: invalid choice: "
                "'trian' (choose from 'embed', "),
    (["test", "--save_dir", "c", "--vocab_file", "v", "--test_prefix", "t",
      "--batchsize", "8"], "bilm-keras: error: unrecognized arguments: "
                           "--batchsize 8"),
    (["export-hub", "--options_file", "o.json", "--outdir", "hub"],
     "bilm-keras export-hub: error: --options_file and --weight_file are "
     "both required (or give --model or --save_dir)"),
    (["export-hub", "--options_file", "o.json", "--weight_file", "w.hdf5",
      "--outdir", "hub", "--checkpoint", "model-2"],
     "bilm-keras export-hub: error: --checkpoint names a checkpoint of "
     "--save_dir; give --save_dir"),
    (["train", "--save_dir", "s", "--vocab_file", "v", "--train_prefix",
      "t", "--init_weights", "w.hdf5", "--init_checkpoint", "c"],
     "bilm-keras train: error: give either --init_weights or "
     "--init_checkpoint, not both"),
    (["train", "--save_dir", "s", "--vocab_file", "v", "--train_prefix",
      "t", "--init_vocab_file", "v"],
     "bilm-keras train: error: --init_vocab_file is the vocabulary of "
     "--init_checkpoint; give --init_checkpoint"),
    (["train", "--save_dir", "s", "--vocab_file", "v", "--train_prefix",
      "t", "--init_model", "elmo-small", "--init_checkpoint", "c"],
     "bilm-keras train: error: give either --init_model or "
     "--init_checkpoint, not both"),
])
def test_other_command_line_errors_are_one_line(capsys, argv, line):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == cli.EXIT_BAD_INPUT
    [err] = capsys.readouterr().err.splitlines()
    assert err.startswith(line), err


@pytest.mark.parametrize("command", ["train", "restart"])
def test_precision_flag_reaches_the_training_run(command):
    from bilm_keras.cli import build_parser
    from bilm_keras.cli._training_flags import training_run

    argv = [command, "--train_prefix", "data/*.txt", "--vocab_file",
            "vocab.txt", "--save_dir", "run"]
    parser = build_parser()
    assert training_run(parser.parse_args(argv)).precision == "float32"
    run = training_run(parser.parse_args(
        argv + ["--precision", "mixed_bfloat16"]))
    assert run.precision == "mixed_bfloat16"
