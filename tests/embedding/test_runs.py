"""Durable embedding runs: ``embed --resume`` after a kill, ``--shard K/N``
and ``merge-embeddings`` (``bilm_keras/embedding/runs.py`` and
``merge.py``), compared with an uninterrupted run of the bilm-tf fixture
model."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest
from helpers import REPO_ROOT, python_argv, run_command, user_env

from bilm_keras import EmbeddingSpec, cli, dump_bilm_embeddings
from bilm_keras.embedding.dump_plan import DumpSettings
from bilm_keras.embedding import runs as embedding_runs
from bilm_keras.embedding.runs import (
    EmbeddingRunError,
    RunEvent,
    partial_dir,
)
from bilm_keras.embedding.shards import shard_lines

#: 11 lines: a repeat (sentence_to_index keeps the last), blanks, non-ASCII
LINES = ["The cat sat on the mat .", "", "深度 学习", "a", "b c d e f g",
         "The cat sat on the mat .", "   ", "x y", "z", "one two three",
         "end ."]
CHUNK = 3  # 4 parts: [0, 3) [3, 6) [6, 9) [9, 11)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    (root / "sentences.txt").write_text("\n".join(LINES) + "\n",
                                        encoding="utf-8")
    return root


def _args(model_dir, corpus, outfile, *extra):
    return [str(a) for a in [
        "embed", "--options_file", model_dir / "options.json",
        "--weight_file", model_dir / "lm_weights.hdf5",
        "--vocab_file", model_dir / "vocab_test.txt",
        "--dataset_file", corpus / "sentences.txt", "--outfile", outfile,
        "--batch_size", 2, "--chunk_size", CHUNK, *extra]]


@pytest.fixture(scope="module")
def uninterrupted(model_dir, corpus):
    """The reference: one uninterrupted run in one process."""
    out = corpus / "uninterrupted.hdf5"
    assert cli.run(_args(model_dir, corpus, out)) == len(LINES)
    return out


def assert_same_file(got, want):
    """Dataset for dataset, attribute for attribute, bit for bit."""
    with h5py.File(got, "r") as g, h5py.File(want, "r") as w:
        assert sorted(g.keys()) == sorted(w.keys())
        for key in w.keys():
            assert g[key].dtype == w[key].dtype, key
            if key == "sentence_to_index":
                assert g[key][0] == w[key][0]
            else:
                np.testing.assert_array_equal(g[key][...], w[key][...])
        assert sorted(g.attrs) == sorted(w.attrs)
        for key in w.attrs:
            np.testing.assert_array_equal(g.attrs[key], w.attrs[key])


# ------------------------------------------------------------ quick tier
@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_interrupted_then_resumed(model_dir, corpus, uninterrupted,
                                  tmp_path, capsys):
    """Dies while writing the third part (as a kill would: no clean-up),
    then continues; the file equals the uninterrupted run's."""
    out = tmp_path / "elmo.hdf5"

    def dying(event):  # the run's own seam: its event callback
        if event == RunEvent("part", 6):  # the third part's first line
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dump_bilm_embeddings(
            str(model_dir / "vocab_test.txt"), str(corpus / "sentences.txt"),
            str(model_dir / "options.json"),
            str(model_dir / "lm_weights.hdf5"), str(out), EmbeddingSpec(),
            DumpSettings(batch_size=2, chunk_size=CHUNK, progress=False,
                         on_event=dying))
    parts = sorted(os.listdir(partial_dir(out)))
    # two parts whole, the third one's temporary file as a kill leaves it
    assert parts == ["manifest.json", "part-000000000000-000000000003.hdf5",
                     "part-000000000003-000000000006.hdf5",
                     "part-000000000006-000000000009.hdf5.tmp"]
    assert not out.exists()
    # without --resume: one line saying how to continue; nothing touched
    # (the command's check, before TensorFlow; the library's own words)
    with pytest.raises(EmbeddingRunError, match=r"elmo.hdf5.partial/: "
                       r"progress of an interrupted run \(2 parts on "
                       r"disk\); add --resume to continue it"):
        cli.run(_args(model_dir, corpus, out))
    with pytest.raises(EmbeddingRunError, match=r"elmo.hdf5.partial/: "
                       r"progress of an interrupted run \(2 of 4 parts "
                       r"done\); add --resume to continue it"):
        dump_bilm_embeddings(
            str(model_dir / "vocab_test.txt"), str(corpus / "sentences.txt"),
            str(model_dir / "options.json"),
            str(model_dir / "lm_weights.hdf5"), str(out), EmbeddingSpec(),
            DumpSettings(batch_size=2, chunk_size=CHUNK, progress=False))
    # another flag: the difference named
    with pytest.raises(EmbeddingRunError, match=r"--resume: .* other inputs "
                       r"or flags \(dtype: \"float32\", not \"float16\"\)"):
        cli.run(_args(model_dir, corpus, out, "--resume", "--float16"))
    assert sorted(os.listdir(partial_dir(out))) == parts
    capsys.readouterr()
    assert cli.run(_args(model_dir, corpus, out, "--resume")) == len(LINES)
    assert "--resume: 2 of 4 parts done (lines 0..6 kept)" in (
        capsys.readouterr().err)
    assert_same_file(out, uninterrupted)
    assert sorted(os.listdir(tmp_path)) == ["elmo.hdf5"]


@pytest.mark.slow  # quick tier: test_interrupted_then_resumed
def test_resume_with_nothing_to_resume_runs(model_dir, corpus, uninterrupted,
                                            tmp_path, capsys):
    out = tmp_path / "elmo.hdf5"
    assert cli.run(_args(model_dir, corpus, out, "--resume")) == len(LINES)
    assert ("--resume: no interrupted run to continue" in
            capsys.readouterr().err)
    assert_same_file(out, uninterrupted)


@pytest.fixture(scope="module")
def three_shards(model_dir, corpus):
    """3 shards of the 11 lines, whole chunks of the single run: [0, 3)
    [3, 6) [6, 11), run in the order 2, 0, 1."""
    paths = {}
    for k in (2, 0, 1):
        paths[k] = corpus / f"part-{k}.hdf5"
        assert cli.run(_args(model_dir, corpus, paths[k], "--shard",
                             f"{k}/3")) == len(range(*shard_lines(
                                 k, 3, 11, CHUNK)))
    return [paths[k] for k in range(3)]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_shards_merge_to_the_single_run(three_shards, uninterrupted,
                                        tmp_path, capsys):
    # each shard is whole chunks of the single run, so it sorts and batches
    # every sentence with the same batch-mates: bit-identical vectors,
    # although TensorFlow's CPU kernels may give a row a result that
    # depends on the other rows of its batch
    with h5py.File(three_shards[2], "r") as f:  # global line numbers
        assert sorted(f.keys(), key=lambda k: (len(k), k)) == [
            "6", "7", "8", "9", "10", "sentence_to_index"]
        assert (f.attrs["shard"], f.attrs["n_shards"],
                f.attrs["n_lines_total"]) == ("2/3", 3, 11)
        assert list(f.attrs["shard_lines"]) == [6, 11]
    merged = tmp_path / "all.hdf5"
    assert cli.run(["merge-embeddings", "--outfile", str(merged),
                    *map(str, three_shards[::-1])]) == len(LINES)
    assert "wrote 11 sentences from 3 shards" in capsys.readouterr().out
    assert_same_file(merged, uninterrupted)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_merge_bad_input(model_dir, corpus, three_shards, tmp_path,
                         uninterrupted):
    out = tmp_path / "all.hdf5"
    p0, p1, p2 = three_shards
    # shard 1/3 of a `--top` run: merge-embeddings reads only a shard's
    # attributes, so a copy with the run's record changed stands for one
    # (without loading a model for it)
    foreign = tmp_path / "foreign-1.hdf5"
    foreign.write_bytes(p1.read_bytes())
    with h5py.File(foreign, "r+") as f:
        run = json.loads(f.attrs["run"])
        run.update(output="top", layers=[2])
        f.attrs["run"] = json.dumps(run, sort_keys=True)
        f.attrs["run_id"] = embedding_runs.run_id(run)
    cases = [
        ([p0, p2], r"shard 1/3 missing \(found 2 of 3 shards of "
                   r".*part-0.hdf5's run\)"),
        ([p0, p1, p2, p1], r"part-1.hdf5: shard 1/3 again \(also "
                           r".*part-1.hdf5\)"),
        ([p0, foreign, p2], r"foreign-1.hdf5: a shard of another run than "
                            r".*part-0.hdf5 \(layers: \[0, 1, 2\], not "
                            r"\[2\]\)"),
        ([p0, uninterrupted], r"uninterrupted.hdf5: not a shard"),
    ]
    for shards, match in cases:
        with pytest.raises(EmbeddingRunError, match=match):
            cli.run(["merge-embeddings", "--outfile", str(out),
                     *map(str, shards)])
        assert not out.exists() and os.listdir(tmp_path) == [foreign.name]
    out.write_bytes(b"a day's work")
    code = subprocess.run(
        [sys.executable, "-m", "bilm_keras.cli", "merge-embeddings",
         "--outfile", str(out), *map(str, three_shards)],
        cwd=REPO_ROOT, env=user_env(), capture_output=True, text=True,
        timeout=120)
    assert code.returncode == 1
    assert code.stderr.splitlines() == [
        f"bilm-keras merge-embeddings: error: --outfile {out}: file exists "
        "(pass --overwrite to replace it)"]
    assert out.read_bytes() == b"a day's work"
    assert cli.run(["merge-embeddings", "--outfile", str(out), "--overwrite",
                    *map(str, three_shards)]) == len(LINES)
    assert_same_file(out, uninterrupted)


def test_bad_shard_flag_is_a_usage_error(model_dir, corpus, tmp_path,
                                         capsys):
    for bad in ["3/3", "1of2", "-1/2"]:
        with pytest.raises(SystemExit) as exit_:
            cli.main(_args(model_dir, corpus, tmp_path / "x.hdf5",
                           f"--shard={bad}"))
        assert exit_.value.code == 1
        assert ("error: argument --shard: expected K/N with 0 <= K < N" in
                capsys.readouterr().err)
    assert os.listdir(tmp_path) == []


# -------------------------------------------------------- killed for real
PAUSED_EMBED = pathlib.Path(__file__).with_name("paused_embed.py")


def _start(model_dir, corpus, out, pause):
    """``embed --batch_size 2 --chunk_size CHUNK`` (as ``_args``) in its own
    process, pausing at ``pause`` (its ``on_event`` callback)."""
    # a child of the command server (TensorFlow's C++ lines at conftest's
    # level: the run's own lines are what is read)
    env = dict(user_env(), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        python_argv(env) + [str(PAUSED_EMBED), pause, str(out),
                            str(model_dir), str(corpus / "sentences.txt"),
                            "2", str(CHUNK)], cwd=REPO_ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def _wait_for_pause(proc, pause, timeout=120):
    """Reads stderr until the run says it paused there (bounded)."""
    seen = []
    reader = threading.Thread(
        target=lambda: seen.extend(iter(proc.stderr.readline, "")),
        daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(f"paused at {pause}" in line for line in list(seen)):
            return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"never paused at {pause}: {''.join(seen)[-2000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("pause,parts_left", [
    ("part:0", 0),      # in the first part: nothing kept
    ("part:7", 2),      # two parts whole, the third half-written
    ("merge:5", 4),     # every part whole, the merge half-way
    ("rename:0", 4),    # the merged file complete, not yet renamed
    ("cleanup:0", 4),   # renamed, the folder not yet removed
])
def test_sigkill_then_resume(model_dir, corpus, uninterrupted, tmp_path,
                             pause, parts_left):
    out = tmp_path / "elmo.hdf5"
    proc = _start(model_dir, corpus, out, pause)
    try:
        _wait_for_pause(proc, pause)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    folder = partial_dir(out)
    parts = [n for n in os.listdir(folder) if n.endswith(".hdf5")]
    assert len(parts) == parts_left
    assert out.exists() == (pause == "cleanup:0")
    assert cli.run(_args(model_dir, corpus, out, "--resume")) == len(LINES)
    assert_same_file(out, uninterrupted)
    assert sorted(os.listdir(tmp_path)) == ["elmo.hdf5"]


# ------------------------------------------------------- a full disk
# free space left for the run on a tmpfs (4 KiB pages): the manifest and
# the parts take 1 + 3 + 3 + 2 + 3 pages, the merged file 6 more
@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("pages_left,where", [
    (6, "part"),  # the first part fits, not the second
    (15, "merge"),  # the merged file
])
def test_full_disk_then_resume_gives_the_uninterrupted_file(
        model_dir, corpus, uninterrupted, small_disk, monkeypatch, capsys,
        pages_left, where):
    """``embed`` on a disk that fills up: one line naming the file, the
    bytes and the space free, exit 1; the part or merged file being
    written is gone, the whole parts stay; with space freed, ``--resume``
    writes the uninterrupted run's file."""
    from full_disk import fail_hdf5_writes, names

    disk = small_disk(4 << 20)
    out = disk.path / "elmo.hdf5"
    folder = partial_dir(out)
    if disk.real:
        disk.fill(leave=pages_left * 4096)
    else:  # the second part's or the merged file's writes fail
        fail_hdf5_writes(monkeypatch, lambda path: path.endswith(
            "003-000000000006.hdf5.tmp" if where == "part"
            else "merged.hdf5.tmp"))
    capsys.readouterr()
    assert cli.main(_args(model_dir, corpus, out)) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    kept = names(disk.path)
    assert kept[0] == "elmo.hdf5.partial" and not any(
        name.endswith(".tmp") for name in kept)
    n_parts = len(kept) - 2  # less the folder and its manifest
    if where == "part":  # the part after the whole ones did not fit
        assert 1 <= n_parts < 4
        a, b = CHUNK * n_parts, min(CHUNK * (n_parts + 1), len(LINES))
        named, what = f"{folder}/part-{a:012d}-{b:012d}.hdf5", (
            f"lines {a}..{b}")
    else:
        assert n_parts == 4
        named, what = str(out), "the merged file"
    assert last.startswith(f"bilm-keras embed: error: {named}: no space "
                           f"left on device (needs ")
    assert last.endswith(
        f" free); {n_parts} whole part{'s' * (n_parts > 1)} kept in "
        f"{folder}/ ({what} not written); free some space and run the "
        f"same command with --resume")
    disk.free_space()
    monkeypatch.undo()
    assert cli.main(_args(model_dir, corpus, out, "--resume")) == 0
    assert_same_file(out, uninterrupted)
    assert names(disk.path) == ["elmo.hdf5"]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_merge_on_a_full_disk_is_one_line_and_leaves_nothing(
        three_shards, small_disk, monkeypatch, capsys):
    from full_disk import fail_hdf5_writes, names

    disk = small_disk(4 << 20)
    out = disk.path / "all.hdf5"
    if disk.real:
        disk.fill(leave=8192)
    else:
        fail_hdf5_writes(monkeypatch, lambda path: True)
    capsys.readouterr()
    assert cli.main(["merge-embeddings", "--outfile", str(out),
                     *map(str, three_shards)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"bilm-keras merge-embeddings: error: {out}: no "
                           f"space left on device (")
    assert line.endswith(" free); free some space and run the command "
                         "again")
    assert names(disk.path) == []


def test_an_error_before_the_first_part_leaves_nothing(model_dir, corpus,
                                                      tmp_path):
    out = tmp_path / "elmo.hdf5"
    with pytest.raises(ValueError, match=r"devices: expected some of "
                                         r".*CPU:0.*, found 'GPU:7'"):
        cli.run(_args(model_dir, corpus, out, "--devices", "GPU:7"))
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_shards_of_copies_elsewhere_merge(model_dir, corpus, tmp_path,
                                          uninterrupted):
    """Shards on two machines read their own copies of the files (other
    paths, other mtimes): the contents identify the run."""
    import shutil

    copy = tmp_path / "node1"
    shutil.copytree(corpus, copy, ignore=shutil.ignore_patterns("*.hdf5"))
    os.utime(copy / "sentences.txt", (1, 1))
    shards = [tmp_path / "p0.hdf5", tmp_path / "p1.hdf5"]
    cli.run(_args(model_dir, corpus, shards[0], "--shard", "0/2"))
    cli.run(_args(model_dir, copy, shards[1], "--shard", "1/2"))
    merged = tmp_path / "all.hdf5"
    cli.run(["merge-embeddings", "--outfile", str(merged), *map(str, shards)])
    with h5py.File(merged, "r") as f, h5py.File(uninterrupted, "r") as w:
        for i in range(len(LINES)):
            np.testing.assert_array_equal(f[str(i)][...], w[str(i)][...])
        assert f.attrs["run_id"] == w.attrs["run_id"]
        assert f.attrs["dataset_file"] == w.attrs["dataset_file"]  # shard 0


def test_leftover_refused_before_tensorflow(model_dir, corpus, tmp_path):
    out = tmp_path / "elmo.hdf5"
    folder = tmp_path / "elmo.hdf5.partial"
    folder.mkdir()
    (folder / "manifest.json").write_text("{}")
    (folder / "part-000000000000-000000000003.hdf5").write_bytes(b"")
    code, heavy, _, err = run_command(_args(model_dir, corpus, out))
    assert (code, "tensorflow" in heavy) == (1, False)
    assert err.splitlines() == [
        f"bilm-keras embed: error: {folder}/: progress of an interrupted run "
        "(1 part on disk); add --resume to continue it, or remove the "
        "folder to start over"]
    assert sorted(os.listdir(folder)) == [
        "manifest.json", "part-000000000000-000000000003.hdf5"]


@pytest.mark.slow  # quick tier: test_interrupted_then_resumed's event
def test_events_come_in_order(model_dir, corpus, uninterrupted, tmp_path):
    out = tmp_path / "elmo.hdf5"
    events = []
    dump_bilm_embeddings(
        str(model_dir / "vocab_test.txt"), str(corpus / "sentences.txt"),
        str(model_dir / "options.json"), str(model_dir / "lm_weights.hdf5"),
        str(out), EmbeddingSpec(),
        DumpSettings(batch_size=2, chunk_size=CHUNK, progress=False,
                     on_event=events.append))
    assert events == (
        [RunEvent("part", i) for i in range(len(LINES))]
        + [RunEvent("merge", k) for k in range(len(LINES))]
        + [RunEvent("rename", 0), RunEvent("cleanup", 0)])
    assert_same_file(out, uninterrupted)
