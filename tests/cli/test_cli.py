"""The ``bilm-keras`` command: help without TensorFlow, one clear line per
expected error, the subcommands behind the ``bin/`` aliases."""

import concurrent.futures
import configparser
import json
import os
import re

import h5py
import numpy as np
import pytest

from helpers import REPO_ROOT, run_command

from bilm_keras import cli

ALIASES = {module.NAME: module.ALIAS for module in cli.COMMANDS}

_run = run_command  # (exit status, heavy modules, stdout, stderr)


def _run_all(calls: dict) -> dict:
    """``{key: _run(*call)}``, the commands run at once (each is a fresh
    interpreter that waits on nothing but itself)."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        futures = {key: pool.submit(_run, *call)
                   for key, call in calls.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module")
def help_runs() -> dict:
    """``--help`` of the command, of every subcommand and of its alias."""
    calls = {None: (["--help"],)}
    for command, alias in ALIASES.items():
        calls[command] = ([command, "--help"],)
        calls[alias] = (["--help"], str(REPO_ROOT / "bin" / alias))
    return _run_all(calls)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("command", [None] + sorted(ALIASES))
def test_help_imports_no_tensorflow(help_runs, command):
    code, heavy, out, err = help_runs[command]
    assert code == 0, err
    assert heavy == [], f"--help imported {heavy}"
    assert out.startswith("usage: bilm-keras"), out
    assert err == ""
    if command is not None:
        # the bin/ alias: the same flags, under the script's name
        alias_code, heavy, alias_out, _ = help_runs[ALIASES[command]]
        assert alias_code == 0 and heavy == []
        assert alias_out.startswith(f"usage: {ALIASES[command]}")
        flags = sorted(w for w in out.split() if w.startswith("--"))
        assert sorted(w for w in alias_out.split()
                      if w.startswith("--")) == flags


def test_help_texts_are_plain_and_show_defaults(capsys):
    for command in [None] + sorted(ALIASES):
        with pytest.raises(SystemExit):
            cli.main(["--help"] if command is None else [command, "--help"])
        out = capsys.readouterr().out
        assert "``" not in out and ":class:" not in out
    with pytest.raises(SystemExit):
        cli.main(["embed", "--help"])
    out = capsys.readouterr().out
    # no batch flag: the embedder's own compute batches
    assert "sentences per LSTM batch (default: the embedder groups" in out
    for flag in ("--all", "--top", "--average", "--sentence_mean",
                 "--layers", "--float16", "--verbose"):
        assert flag in out
    with pytest.raises(SystemExit):
        cli.main(["test", "--help"])
    # the figure is evaluate()'s, written once there
    assert "Batch size (default: run_test.py's)" in capsys.readouterr().out


def test_console_script_is_declared():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    scripts = config["options.entry_points"]["console_scripts"].split("=")
    assert [s.strip() for s in scripts] == [
        "bilm-keras", "bilm_keras.cli:console_main"]
    assert callable(cli.console_main)


@pytest.fixture(scope="module")
def inputs(model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    (root / "ok.txt").write_text("The cat sat .\n深度 学习\n\na b c\n",
                                 encoding="utf-8")
    (root / "latin1.txt").write_bytes(b"good line\ncaf\xe9 au lait\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "old.hdf5").write_bytes(b"a day of work")
    options = json.loads((model_dir / "options.json").read_text())
    del options["lstm"]["dim"]
    (root / "no_dim.json").write_text(json.dumps(options))
    options = json.loads((model_dir / "options.json").read_text())
    options["lstm"]["projection_dim"] = 8  # the weights have 16
    (root / "narrow.json").write_text(json.dumps(options))
    (root / "corpus").mkdir()
    (root / "corpus" / "a.txt").write_text("a b\n")
    return root


def _embed(model_dir, root, dataset, *extra, options=None):
    return ["embed", "--options_file",
            options or model_dir / "options.json",
            "--weight_file", model_dir / "lm_weights.hdf5",
            "--dataset_file", root / dataset,
            "--outfile", root / "out.hdf5", *extra]


# (arguments, exit status, the one line on stderr); none of these needs
# TensorFlow to be found. Every bad input exits 1 (cli.EXIT_BAD_INPUT),
# a bad flag's value as a missing file
BEFORE_TENSORFLOW = [
    (lambda m, r: _embed(m, r, "missing.txt"), 1,
     r"bilm-keras embed: error: .*missing.txt: no such file"),
    (lambda m, r: _embed(m, r, "latin1.txt"), 1,
     r"bilm-keras embed: error: .*latin1.txt, line 2: not valid UTF-8 at "
     r"byte 3 of the line"),
    (lambda m, r: _embed(m, r, "empty.txt"), 1,
     r"bilm-keras embed: error: .*empty.txt: empty input \(expected one "
     r"whitespace-tokenized sentence per line, found 0 lines\)"),
    (lambda m, r: _embed(m, r, "ok.txt", options=r / "no_dim.json"), 1,
     r"bilm-keras embed: error: .*no_dim.json: missing field 'lstm.dim' "
     r"\(expected int\)"),
    (lambda m, r: _embed(m, r, "ok.txt", "--layers", "3"), 1,
     r"bilm-keras embed: error: --layers: expected indices in 0..2, "
     r"found \[3\]"),
    (lambda m, r: _embed(m, r, "ok.txt", "--top", "--layers", "1"), 1,
     r"bilm-keras embed: error: --layers: output 'top' is layer 2"),
    (lambda m, r: _embed(m, r, "ok.txt", "--batch_size", "0"), 1,
     r"bilm-keras embed: error: argument --batch_size: expected an "
     r"integer >= 1, found 0"),
    (lambda m, r: _embed(m, r, "ok.txt", "--top", "--average"), 1,
     r"bilm-keras embed: error: argument --average: not allowed with "
     r"argument --top"),
    (lambda m, r: ["embed", "--options_file", m / "options.json",
                   "--weight_file", r / "nope.hdf5", "--dataset_file",
                   r / "ok.txt", "--outfile", r / "out.hdf5"], 1,
     r"bilm-keras embed: error: --weight_file .*nope.hdf5: no such file"),
    (lambda m, r: ["build-vocab", "--train_prefix", r / "latin1.txt",
                   "--vocab_file", r / "v.txt"], 1,
     r"bilm-keras build-vocab: error: .*latin1.txt, line 2: not valid "
     r"UTF-8"),
    (lambda m, r: ["build-vocab", "--train_prefix", r / "none*.txt",
                   "--vocab_file", r / "v.txt"], 1,
     r"bilm-keras build-vocab: error: --train_prefix .*: no file matches"),
    (lambda m, r: ["train", "--train_prefix", r / "corpus" / "*.txt",
                   "--vocab_file", r / "nope.txt", "--save_dir",
                   r / "ckpt"], 1,
     r"bilm-keras train: error: --vocab_file .*nope.txt: no such file"),
    (lambda m, r: ["train", "--train_prefix", r / "corpus" / "*.txt",
                   "--vocab_file", r / "ok.txt", "--save_dir", r / "ckpt",
                   "--options", r / "no_dim.json"], 1,
     r"bilm-keras train: error: .*no_dim.json: missing field 'lstm.dim'"),
    (lambda m, r: ["restart", "--train_prefix", r / "corpus" / "*.txt",
                   "--vocab_file", r / "ok.txt", "--save_dir", r], 1,
     r"bilm-keras restart: error: --save_dir .*: not a training directory"),
    (lambda m, r: ["test", "--save_dir", r / "nope", "--vocab_file",
                   r / "ok.txt", "--test_prefix", r / "ok.txt"], 1,
     r"bilm-keras test: error: --save_dir .*nope: no such directory"),
    (lambda m, r: ["dump-weights", "--save_dir", r / "ok.txt", "--outfile",
                   r / "w.hdf5"], 1,
     r"bilm-keras dump-weights: error: --save_dir .*ok.txt: is a file"),
    (lambda m, r: ["dump-tokens", "--vocab_file", r / "nope.txt",
                   "--options_file", m / "options.json", "--weight_file",
                   m / "lm_weights.hdf5", "--outfile", r / "t.hdf5"], 1,
     r"bilm-keras dump-tokens: error: --vocab_file .*nope.txt: no such"),
    (lambda m, r: ["export-hub", "--options_file", m / "options.json",
                   "--outdir", r / "hub"], 1,
     r"bilm-keras export-hub: error: --options_file and --weight_file are "
     r"both required"),
    (lambda m, r: ["pipeline", "--corpus", r / "none*.txt"], 1,
     r"bilm-keras pipeline: error: --corpus .*: no file matches"),
    # tests/cli/test_flags.py has every flag and output file in-process
    (lambda m, r: ["train", "--train_prefix", r / "corpus" / "*.txt",
                   "--vocab_file", r / "ok.txt", "--save_dir", r / "ckpt",
                   "--n_epochs", "0"], 1,
     r"bilm-keras train: error: argument --n_epochs: expected an integer "
     r">= 1, found 0"),
    (lambda m, r: _embed(m, r, "ok.txt")[:-2] + ["--outfile",
                                                 r / "old.hdf5"], 1,
     r"bilm-keras embed: error: --outfile .*old.hdf5: file exists \(pass "
     r"--overwrite to replace it\)"),
]


@pytest.fixture(scope="module")
def error_runs(model_dir, inputs) -> dict:
    """Every case of ``BEFORE_TENSORFLOW``, run (none writes anything, so
    they can run at once)."""
    return _run_all({case: (make_args(model_dir, inputs),)
                     for case, (make_args, _, _) in enumerate(
                         BEFORE_TENSORFLOW)})


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("case", range(len(BEFORE_TENSORFLOW)))
def test_expected_errors_are_one_line(model_dir, inputs, error_runs, case):
    _, status, pattern = BEFORE_TENSORFLOW[case]
    code, heavy, _, err = error_runs[case]
    assert code == status == cli.EXIT_BAD_INPUT, err
    lines = err.splitlines()
    assert len(lines) == 1, err  # no usage block
    assert "Traceback" not in err
    assert re.fullmatch(pattern + ".*", lines[-1]), lines[-1]
    assert "tensorflow" not in heavy and "keras" not in heavy
    assert not (inputs / "out.hdf5").exists()
    assert not (inputs / "ckpt").exists()
    assert (inputs / "old.hdf5").read_bytes() == b"a day of work"


@pytest.mark.slow
def test_wrong_shapes_after_loading_is_one_line(model_dir, inputs):
    code, heavy, _, err = _run(
        _embed(model_dir, inputs, "ok.txt", options=inputs / "narrow.json"))
    assert code == cli.EXIT_BAD_INPUT
    # TensorFlow was imported, and said nothing
    assert "tensorflow" in heavy
    assert err.splitlines() == [
        f"bilm-keras embed: error: {model_dir / 'lm_weights.hdf5'}: "
        "dataset 'CNN_proj/W_proj' has shape (124, 16), expected (124, 8)"]
    assert not (inputs / "out.hdf5").exists()


def test_verbose_shows_the_traceback(model_dir, inputs):
    code, _, _, err = _run(_embed(model_dir, inputs, "missing.txt",
                                  "--verbose"))
    assert code == cli.EXIT_BAD_INPUT
    assert "Traceback" in err and "SentenceFileError" in err
    assert err.splitlines()[-1].startswith("bilm-keras embed: error: ")


def test_run_raises_for_programs(model_dir, inputs):
    # run(): the aliases' main(); errors are raised, not printed
    from bilm_keras.data.sentence_file import SentenceFileError

    with pytest.raises(SentenceFileError, match="missing.txt: no such"):
        cli.run([str(a) for a in _embed(model_dir, inputs, "missing.txt")])


@pytest.fixture(scope="module")
def ok_embeddings(fixture_bilm, inputs):
    """Every layer of ``ok.txt``'s embeddings, from the library."""
    model = fixture_bilm
    lines = (inputs / "ok.txt").read_text(encoding="utf-8").splitlines()
    return model.embed_sentences([line.split() for line in lines])


@pytest.mark.slow
@pytest.mark.parametrize("flag,output", [
    ([], "all"),
    pytest.param(["--top"], "top", marks=pytest.mark.slow),
    pytest.param(["--average"], "average", marks=pytest.mark.slow),
    (["--sentence_mean", "--float16"], "sentence_mean"),
])
def test_embed_output_flags(model_dir, inputs, ok_embeddings, tmp_path,
                            capsys, flag, output):
    out = tmp_path / "elmo.hdf5"
    args = [str(a) for a in _embed(model_dir, inputs, "ok.txt", *flag)]
    args[args.index("--outfile") + 1] = str(out)
    assert cli.run(args) == 4
    stdout = capsys.readouterr().out
    assert f"wrote 4 sentences to {out} ({output}" in stdout
    full = ok_embeddings
    with h5py.File(out, "r") as f:
        assert f.attrs["output"] == output
        dtype = np.float16 if "--float16" in flag else np.float32
        assert f.attrs["dtype"] == np.dtype(dtype).name
        index = json.loads(f["sentence_to_index"][0])
        assert index == {"The cat sat .": "0", "深度 学习": "1", "": "2",
                         "a b c": "3"}
        for i, layers in enumerate(full):
            got = f[str(i)][...]
            assert got.dtype == dtype
            want = {"all": layers, "top": layers[2],
                    "average": layers.mean(axis=0),
                    "sentence_mean": (layers.mean(axis=0).mean(axis=0)
                                      if layers.shape[1] else np.zeros(32)),
                    }[output]
            np.testing.assert_allclose(got.astype(np.float32), want,
                                       atol=2e-3 if dtype == np.float16
                                       else 1e-6)


@pytest.mark.slow  # quick tier: the refusal is a BEFORE_TENSORFLOW case,
# the replacing write tests/_utils/test_atomic_files.py
def test_embed_replaces_an_outfile_only_with_overwrite(model_dir, inputs,
                                                      ok_embeddings,
                                                      tmp_path):
    out = tmp_path / "elmo.hdf5"
    args = [str(a) for a in _embed(model_dir, inputs, "ok.txt", "--top")]
    args[args.index("--outfile") + 1] = str(out)
    out.write_bytes(b"a day of work")
    with pytest.raises(ValueError, match="file exists"):
        cli.run(args)
    assert out.read_bytes() == b"a day of work"
    assert cli.run(args + ["--overwrite"]) == 4
    with h5py.File(out, "r") as f:
        np.testing.assert_allclose(f["0"][...], ok_embeddings[0][2],
                                   atol=1e-6)
