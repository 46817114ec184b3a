"""``bilm-keras embed --runner``: the same file as ``embed`` from a Beam
pipeline on two worker processes (character input; token input with
``--mix``), a glob of inputs, and each bad input as one line, exit 1, no
output (an empty input, a line that is not UTF-8, an unknown runner, a Beam
option Beam rejects, Beam missing). Without ``--runner`` Beam is not
imported."""

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from helpers import REPO_ROOT, python_argv, require_extra, user_env

from bilm_keras import cli

LINES = ["The cat sat .", "深度 学习", "", "a b c", "The cat sat .",
         "the cat", "dog"]
#: two worker processes: the smallest pool that splits the work
TWO_WORKERS = ["--runner", "DirectRunner", "--direct_num_workers", "2",
               "--direct_running_mode", "multi_processing"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("embed_runner")
    (root / "ok.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (root / "empty.txt").write_text("\n\n", encoding="utf-8")
    (root / "latin1.txt").write_bytes("ok\ncaf\xe9 au lait\n".encode(
        "latin-1"))
    tokens = sorted({t for line in LINES for t in line.split()})
    (root / "vocab.txt").write_text("\n".join(["<S>", "</S>"] + tokens)
                                    + "\n", encoding="utf-8")
    return root


def _embed(model_dir, dataset, outfile, *extra):
    return [str(a) for a in [
        "embed", "--options_file", model_dir / "options.json",
        "--weight_file", model_dir / "lm_weights.hdf5",
        "--dataset_file", dataset, "--outfile", outfile, *extra]]


def assert_same_embeddings(got, want, attributes=True):
    """Every dataset to 1e-6, the same names, ``sentence_to_index`` and
    (``attributes``) attributes."""
    with h5py.File(got, "r") as g, h5py.File(want, "r") as w:
        assert sorted(g) == sorted(w)
        for key in w:
            if key == "sentence_to_index":
                assert json.loads(g[key][0]) == json.loads(w[key][0])
                continue
            assert g[key].dtype == w[key].dtype and g[key].shape == \
                w[key].shape, key
            np.testing.assert_allclose(g[key][...], w[key][...], rtol=0,
                                       atol=1e-6)
        if attributes:
            assert sorted(g.attrs) == sorted(w.attrs)
            for name, value in w.attrs.items():
                np.testing.assert_array_equal(g.attrs[name], value, name)


@pytest.mark.nightly
@pytest.mark.slow
@pytest.mark.parametrize("model_input", ["characters", "tokens_mix"])
def test_two_workers_write_embeds_file(model_dir, root, tmp_path, capsys,
                                       monkeypatch, model_input):
    require_extra("apache_beam", "beam")
    # Beam starts each worker as `sys.executable -m
    # apache_beam.runners.worker.sdk_worker_main`: here a child forked from
    # the command server (helpers.python_argv), two processes still, each
    # without its own TensorFlow import (3-4 CPU s a worker)
    monkeypatch.setattr(sys, "executable", python_argv()[0])
    flags = ["--chunk_size", "3"]  # three ranges: work for both workers
    if model_input == "tokens_mix":
        table = tmp_path / "tokens.hdf5"
        cli.run([str(a) for a in [
            "dump-tokens", "--vocab_file", root / "vocab.txt",
            "--options_file", model_dir / "options.json", "--weight_file",
            model_dir / "lm_weights.hdf5", "--outfile", table]])
        flags += ["--vocab_file", str(root / "vocab.txt"),
                  "--embedding_weight_file", str(table),
                  "--mix", "0.2", "0.5", "0.3", "--gamma", "0.7"]
    plain, beam = tmp_path / "plain.hdf5", tmp_path / "beam.hdf5"
    assert cli.main(_embed(model_dir, root / "ok.txt", plain, *flags)) == 0
    capsys.readouterr()
    assert cli.main(_embed(model_dir, root / "ok.txt", beam, *flags,
                           *TWO_WORKERS)) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"wrote {len(LINES)} sentences to {beam} (")
    assert "DirectRunner" in out and err == ""
    assert_same_embeddings(beam, plain)
    # the parts' folder and every temporary file are gone
    assert not [name for name in os.listdir(tmp_path)
                if ".beam-" in name or ".tmp" in name]


@pytest.mark.slow
def test_a_glob_numbers_lines_on_across_files(model_dir, root, tmp_path):
    # in this process (Beam's in-memory DirectRunner): the files' lines in
    # path order, as embed numbers the lines of their concatenation
    require_extra("apache_beam", "beam")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "b.txt").write_text("\n".join(LINES[4:]) + "\n", "utf-8")
    (parts / "a.txt").write_text("\n".join(LINES[:4]) + "\n", "utf-8")
    whole = tmp_path / "whole.txt"
    whole.write_text("\n".join(LINES) + "\n", "utf-8")
    plain, beam = tmp_path / "plain.hdf5", tmp_path / "beam.hdf5"
    cli.run(_embed(model_dir, whole, plain, "--top", "--chunk_size", "3"))
    cli.run(_embed(model_dir, parts / "*.txt", beam, "--top",
                   "--chunk_size", "3", "--runner", "DirectRunner"))
    assert_same_embeddings(beam, plain, attributes=False)
    with h5py.File(beam, "r") as f:
        assert f.attrs["dataset_file"] == str(parts / "*.txt")
        assert json.loads(f.attrs["run"])["dataset_file_n_files"] == 2


@pytest.mark.parametrize("dataset,flags,line", [
    ("empty.txt", [], "empty.txt: empty input (expected one "
                      "whitespace-tokenized sentence per line, found 2 "
                      "lines, all blank)"),
    ("latin1.txt", [], "latin1.txt, line 2: not valid UTF-8 at byte 3"),
    ("nothing-*.txt", [], "nothing-*.txt: no file matches"),
    ("ok.txt", ["--runner", "NoSuchRunner"],
     "--runner NoSuchRunner: Unexpected pipeline runner: NoSuchRunner. "
     "Valid values are"),
    ("ok.txt", ["--direct_num_workers", "two"],
     "Beam option: argument --direct_num_workers: invalid int value: "
     "'two'"),
    ("ok.txt", ["--no_such_beam_option", "3"],
     "unrecognized arguments: --no_such_beam_option 3 (not an option of "
     "embed, nor of Beam's PipelineOptions)"),
    ("ok.txt", ["--resume"], "--resume: not with --runner"),
])
def test_bad_input_is_one_line_exit_1_no_output(model_dir, root, tmp_path,
                                                capsys, dataset, flags,
                                                line):
    require_extra("apache_beam", "beam")
    out = tmp_path / "out.hdf5"
    runner = [] if "--runner" in flags else ["--runner", "DirectRunner"]
    argv = _embed(model_dir, root / dataset, out, *runner, *flags)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err, err
    assert err.startswith("bilm-keras embed: error: ")
    if dataset in ("empty.txt", "latin1.txt"):
        # the same line as embed without --runner
        assert cli.main(_embed(model_dir, root / dataset, out)) == 1
        assert capsys.readouterr().err == err
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_without_runner_beam_is_not_imported_and_missing_beam_is_one_line(
        model_dir, root, tmp_path):
    # Beam made unimportable (as if not installed): embed runs (so it
    # imports no Beam), --runner says in one line what to install
    script = f"""
import sys
sys.modules["apache_beam"] = None
from bilm_keras import cli
argv = {_embed(model_dir, root / "ok.txt", tmp_path / "plain.hdf5")!r}
assert cli.main(argv + ["--top"]) == 0
print("imported:", "tensorflow" in sys.modules)
argv = {_embed(model_dir, root / "ok.txt", tmp_path / "beam.hdf5")!r}
sys.exit(cli.main(argv + ["--runner", "DirectRunner"]))
"""
    # a fresh interpreter, not helpers.python_argv: whether embed imported
    # TensorFlow (and not Beam) is the point
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT,
                          env=user_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "imported: True" in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("bilm-keras embed: error: --runner: needs "
                           "Apache Beam (")
    assert "pip install 'bilm_keras[beam]'" in last
    assert sorted(os.listdir(tmp_path)) == ["plain.hdf5"]


@pytest.mark.slow
def test_prism_runner(model_dir, root, tmp_path):
    require_extra("apache_beam", "beam")
    cache = os.path.expanduser("~/.apache_beam/cache/prism/bin")
    if not (os.path.isdir(cache) and os.listdir(cache)):
        pytest.skip("PrismRunner downloads its runner binary from GitHub at "
                    "first use (none cached in ~/.apache_beam/cache/prism/"
                    "bin); this machine reaches no network beyond PyPI")
    plain, beam = tmp_path / "plain.hdf5", tmp_path / "beam.hdf5"
    cli.run(_embed(model_dir, root / "ok.txt", plain, "--average"))
    cli.run(_embed(model_dir, root / "ok.txt", beam, "--average",
                   "--runner", "PrismRunner"))
    assert_same_embeddings(beam, plain)
