"""Every ``bash`` and ``python`` block of README.md, CONTRIBUTING.md and
docs/*.md runs, so the documents cannot drift from the code.

One test per document (a failure names it). Its blocks run in order, in
an interpreter of its own (``tests/doc_blocks.py``), in a scratch folder
of its own that holds (the doc-block convention, CONTRIBUTING.md):

* bilm-tf's fixture model as ``options.json``, ``lm_weights.hdf5`` and
  ``vocab.txt``; a small text ``sentences.txt`` (one whitespace-tokenized
  sentence a line, English and segmented Chinese); a corpus
  ``corpus/train/*.txt`` and ``corpus/heldout/*.txt``; ELMoForManyLangs'
  tiny fixture model as released, ``zht.model/``; Paddle's Fluid (baike)
  fixture checkpoint, ``baike_checkpoint/``, and its vocabulary,
  ``vocabulary_min5k.txt`` (35 words, standing in for the release's);
* the repository's ``bin``, ``examples``, ``bench``, ``tests`` (bilm-tf's
  run fixtures) and usage scripts, linked, so a block reads as if run
  from the repository root (and writes nothing into it);
* ``bilm-keras`` on ``PATH``; ``BILM_KERAS_MODEL_MIRROR`` at a local
  server (127.0.0.1) that serves fixture models at every path of the
  registry (bilm-tf's fixture model for AllenNLP's English names,
  ELMoForManyLangs' tiny fixture model for the 44 languages, the baike
  fixture checkpoint for ``paddle-baike-zh``), and
  ``BILM_KERAS_CACHE`` in the folder: nothing touches the network.

The interpreter, and each ``bilm-keras ...`` and ``python bin/X.py ...``
line of a block, is a child forked from a command server that imported
TensorFlow, Keras and bilm_keras once (``tests/command_server.py``: its
shims come first on ``PATH``); each gets the block's folder, environment,
argv, stdin, stdout and stderr, and its exit status is the line's. It
saves the 2-4 s of TensorFlow's import about 80 times; the real console
script is proven in ``tests/cli/test_cli.py`` and
``tests/test_wheel_install.py``.

Every whole ``bilm-keras ...`` command in a table cell runs too, as a
block of its own after the document's blocks, with the flags the cell
gives (``doc_blocks.table_commands``: a cell that only names a command
or a flag is a reference and does not run). The scratch folder also holds
PaddleNLP's fixture checkpoint as ``final.pdparams`` with its vocabulary
``paddle_vocab.txt``, and the mirror serves TF1 Hub module fixtures at
the ``tfhub-tf1`` rows' paths.

A block whose info string says ``notest`` is not run, and says why after
it (``bash notest: it needs a Slurm cluster``). A document that names a
path of the repository that does not exist fails too, and (a quick test)
one that gives a subcommand a flag it does not have, in a block, run or
not, or in prose (``restart --checkpoint``). The two set-up commands at
the top of the README are a ``notest`` block: CI runs them
(``.ci/run``).
"""

import argparse
import functools
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

from doc_blocks import (
    NamedFlag,
    code_blocks,
    table_commands,
    linked_files,
    named_flags,
    named_repo_paths,
    repo_path_exists,
    unknown_flags,
)
from helpers import REPO_ROOT, command_servers, user_env

DOCUMENTS = sorted(
    [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md"]
    + list((REPO_ROOT / "docs").glob("*.md")))

#: the documents whose blocks train, convert or export for longest (13 s
#: to a few minutes each on the AVX2 EPYC): run in the nightly tier (``pytest -m nightly``,
#: CI's second command); the default run still checks the flags they
#: name (``test_every_flag_named_exists``)
NIGHTLY_DOCUMENTS = ("docs/paddle.md", "docs/training.md",
                     "docs/bilm-tf-runs.md", "docs/manylangs.md",
                     "docs/pretrained-models.md", "docs/savedmodel.md",
                     "docs/beam.md", "docs/long-runs.md",
                     "docs/embedding.md", "docs/migrating.md")

#: what the documents' scratch folders link from the repository
LINKED = ("bin", "examples", "bench", "tests", "usage_character.py",
          "usage_token.py", "usage_cached.py")

SENTENCES = [
    "The cat sat on the mat .",
    "Pretrained biLMs compute representations from characters .",
    "今天 天氣 真好 阿",
    "潮水 退 了 就 知道 誰 沒 穿 褲子",
]


def _relative(document: pathlib.Path) -> str:
    return document.relative_to(REPO_ROOT).as_posix()


@pytest.fixture(scope="module")
def mirror(bilm_fixtures, manylangs_fixtures, paddle_baike_fixtures):
    """A local server with a fixture model at every registry path."""
    import urllib.parse

    from bilm_keras.pretrained.registry import registered_models

    server_module = _model_server_module()
    model = bilm_fixtures / "model"
    tiny = manylangs_fixtures / "tiny.model"
    routes = {}
    for entry in registered_models().values():
        if entry.format == "bilm-tf":
            routes[urllib.parse.urlsplit(entry.options_url).path] = (
                model / "options.json").read_bytes()
            routes[urllib.parse.urlsplit(entry.weight_url).path] = (
                model / "lm_weights.hdf5").read_bytes()
            if entry.alignment_url:  # a matrix of the fixture's size
                routes[urllib.parse.urlsplit(entry.alignment_url).path] = (
                    pathlib.Path(__file__).resolve().parent / "fixtures"
                    / "xling" / "best_mapping.pth").read_bytes()
            continue
        if entry.format == "tfhub-tf1":  # a module, its mix included
            module = pathlib.Path(__file__).resolve().parent / "fixtures" \
                / "tfhub_modules" / ("deeppavlov" if "deeppavlov"
                                     in entry.name else "google")
            routes[urllib.parse.urlsplit(entry.archive_url).path] = (
                server_module.tar_bytes({
                    str(f.relative_to(module)): f.read_bytes()
                    for f in sorted(module.rglob("*")) if f.is_file()},
                    "w:gz"))
            continue
        if entry.format in ("bilm-tf-archive", "tf1-checkpoint"):
            # the bilm-tf fixture model in an archive; a model published
            # in parts is that archive cut in as many pieces
            data = server_module.tar_bytes(
                server_module.bilm_tf_files(model), "w:gz")
            urls = entry.archive_parts or (entry.archive_url,)
            step = -(-len(data) // len(urls))
            for k, url in enumerate(urls):
                routes[urllib.parse.urlsplit(url).path] = (
                    data[k * step:(k + 1) * step])
            continue
        path = urllib.parse.urlsplit(entry.archive_url).path
        if entry.format == "paddle-fluid":
            routes[path] = server_module.tar_bytes(
                server_module.folder_files(
                    paddle_baike_fixtures / "checkpoint",
                    "baike_elmo_checkpoint/"), "w:gz")
            continue
        files = server_module.manylangs_files(tiny, f"{entry.name}.model/")
        routes[path] = (server_module.zip_bytes(files)
                        if path.endswith(".zip")
                        else server_module.tar_bytes(
                            files, "w:bz2" if path.endswith(".bz2")
                            else "w:gz"))
    server = server_module.ModelServer(routes)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def command_server(tmp_path_factory):
    """The command server (``tests/command_server.py``) of this pytest
    process for the documents' environment: the folder of its shims
    (``bilm-keras``, ``python``, ``run-script``) and the environment
    that names its socket."""
    from command_server import SOCKET_ENV, write_shims

    shims = tmp_path_factory.mktemp("shims")
    write_shims(shims)
    env = user_env()
    env.update(TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
    return shims, {SOCKET_ENV: command_servers().socket_path(env)}


def _model_server_module():
    """``tests/pretrained/model_server.py`` (the registry tests' server)."""
    if "model_server" in sys.modules:
        return sys.modules["model_server"]
    path = REPO_ROOT / "tests" / "pretrained" / "model_server.py"
    spec = importlib.util.spec_from_file_location("model_server", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_server"] = module
    spec.loader.exec_module(module)
    return module


def _scratch_folder(folder: pathlib.Path, bilm_fixtures,
                    manylangs_fixtures, paddle_baike_fixtures) -> None:
    """The doc-block convention's files (module docstring)."""
    shutil.copytree(manylangs_fixtures / "tiny.model", folder / "zht.model")
    shutil.copytree(paddle_baike_fixtures / "checkpoint",
                    folder / "baike_checkpoint")
    shutil.copyfile(paddle_baike_fixtures / "vocab.txt",
                    folder / "vocabulary_min5k.txt")
    paddlenlp = REPO_ROOT / "tests" / "fixtures" / "paddlenlp_elmo"
    shutil.copyfile(paddlenlp / "elmo.pdparams", folder / "final.pdparams")
    shutil.copyfile(paddlenlp / "vocab.txt", folder / "paddle_vocab.txt")
    model = bilm_fixtures / "model"
    shutil.copyfile(model / "options.json", folder / "options.json")
    shutil.copyfile(model / "lm_weights.hdf5", folder / "lm_weights.hdf5")
    shutil.copyfile(model / "vocab_test.txt", folder / "vocab.txt")
    (folder / "sentences.txt").write_text(
        "\n".join(SENTENCES) + "\n", encoding="utf-8")
    # the corpus: bilm-tf's training text and its reference sentences
    lines = (bilm_fixtures / "train" / "data.txt").read_text(
        "utf-8").splitlines()
    for group in json.loads(
            (model / "lm_embeddings_sentences.json").read_text("utf-8")):
        lines += group
    for name, part in (("train", lines[:-6]), ("heldout", lines[-6:])):
        (folder / "corpus" / name).mkdir(parents=True)
        half = len(part) // 2
        for k, chunk in enumerate((part[:half], part[half:])):
            (folder / "corpus" / name / f"part-{k}.txt").write_text(
                "\n".join(chunk) + "\n", encoding="utf-8")
    for name in LINKED:
        (folder / name).symlink_to(REPO_ROOT / name)


def test_every_document_is_found():
    names = {_relative(d) for d in DOCUMENTS}
    assert {"README.md", "CONTRIBUTING.md", "docs/architecture.md"} <= names


@functools.cache
def _command_flags() -> dict:
    """Each subcommand's option strings, by its name and by its ``bin/``
    alias's file name, from the parser itself (no TensorFlow)."""
    from bilm_keras import cli

    subparsers = next(
        action for action in cli.build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)).choices
    flags = {name: set(parser._option_string_actions)
             for name, parser in subparsers.items()}
    for module in cli.COMMANDS:
        flags[module.ALIAS] = flags[module.NAME]
    return flags


def _is_command(argv) -> bool:
    """Whether ``bilm-keras``'s parser takes ``argv`` whole (no run)."""
    import contextlib
    import io

    from bilm_keras import cli

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cli.build_parser().parse_args(argv)
    except SystemExit:
        return False
    return True


def test_table_commands_are_found():
    text = "\n".join([
        "| AllenNLP | bilm_keras |",
        "|---|---|",
        "| `allennlp elmo in.txt out.hdf5` | `bilm-keras embed --model "
        "elmo-original --dataset_file in.txt --outfile out.hdf5 --all` |",
        "| `--precision` | `bilm-keras embed --precision`; `bilm-keras "
        "models` |",
        "Prose naming `bilm-keras models --cached` runs nothing.",
    ])
    assert table_commands(text, _is_command) == [
        (3, "bilm-keras embed --model elmo-original --dataset_file in.txt "
            "--outfile out.hdf5 --all"),
        (4, "bilm-keras models")]


def _bench_flags() -> set:
    """The flags the benchmark scripts define (``--quick``, ...)."""
    found = set()
    for script in (REPO_ROOT / "bench").glob("*.py"):
        found |= set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"",
                                script.read_text("utf-8")))
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=_relative)
def test_every_flag_named_exists(document):
    # `restart --checkpoint`, `bilm-keras embed --average`, `bin/restart.py
    # --save_dir` in prose and in every code block, run or not
    flags = _command_flags()
    aliases = {name for name in flags if name.endswith(".py")}
    named = named_flags(document.read_text("utf-8"),
                        set(flags) - aliases, aliases)
    unknown = unknown_flags(named, flags, other_flags=_bench_flags())
    assert not unknown, "flags their command does not have:\n" + "\n".join(
        f"{_relative(document)}:{f.line}: {f.command or '(alone)'} {f.flag}"
        for f in unknown)


def test_reading_finds_flags_of_commands():
    text = "\n".join([
        "Continue with `restart --checkpoint\nmodel-40`, or",
        "`bilm-keras embed --average` and `--quick` alone; `embed_sentences`",
        "and `test_docs.py --x` name no command.",
        "```bash notest",
        "bilm-keras train --n_gpus 2 \\",
        "    --save_dir ckpt/  # --not_a_flag",
        "python bin/restart.py --save_dir x | bilm-keras models --cached",
        "bilm-keras embed --runner DirectRunner --project p",
        "```",
        "```text",
        "bilm-keras embed --in_output_only",
        "```",
    ])
    subcommands = {"restart", "embed", "train", "models", "test"}
    named = named_flags(text, subcommands, {"restart.py"})
    assert named == [
        NamedFlag(1, "restart", "--checkpoint"),
        NamedFlag(3, "", "--quick"), NamedFlag(3, "embed", "--average"),
        NamedFlag(6, "train", "--n_gpus"), NamedFlag(6, "train", "--save_dir"),
        NamedFlag(8, "models", "--cached"),
        NamedFlag(8, "restart.py", "--save_dir"),
        NamedFlag(9, "embed", "--project"), NamedFlag(9, "embed", "--runner")]
    flags = {"restart": {"--save_dir"}, "restart.py": {"--save_dir"},
             "embed": {"--average", "--runner"}, "models": {"--cached"},
             "train": {"--n_gpus", "--save_dir"}, "test": {"--checkpoint"}}
    # --checkpoint is test's, not restart's; --project goes to Beam
    assert unknown_flags(named, flags, other_flags={"--quick"}) == [
        NamedFlag(1, "restart", "--checkpoint")]
    assert unknown_flags(named, flags) == [
        NamedFlag(1, "restart", "--checkpoint"), NamedFlag(3, "", "--quick")]


@pytest.mark.slow
@pytest.mark.parametrize("document", [
    pytest.param(d, marks=pytest.mark.nightly)
    if _relative(d) in NIGHTLY_DOCUMENTS else d for d in DOCUMENTS],
    ids=_relative)
def test_document(document, tmp_path, bilm_fixtures, manylangs_fixtures,
                  paddle_baike_fixtures, mirror, command_server):
    name = _relative(document)
    text = document.read_text("utf-8")

    # every path of the repository it names, and every file it links
    # (relative to itself), exists
    named = set(named_repo_paths(text)) | {
        (line, pathlib.Path(os.path.relpath(
            document.parent / target, REPO_ROOT)).as_posix())
        for line, target in linked_files(text)}
    missing = sorted(f"{name}:{line}: {path}" for line, path in named
                     if not repo_path_exists(path))
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)

    blocks = code_blocks(text)
    # a block that is not run says why, in its info string
    silent = [f"{name}:{b.line}" for b in blocks
              if "notest" in b.flags and not b.reason]
    assert not silent, (
        "notest blocks that do not say why they are not run "
        "(```bash notest: REASON): " + ", ".join(silent))

    runnable = [dict(language=b.language, code=b.code, line=b.line)
                for b in blocks if b.runs] + [
        dict(language="bash", code=command + "\n", line=line)
        for line, command in table_commands(text, _is_command)]
    if not runnable:
        return

    folder = tmp_path / "scratch"
    folder.mkdir()
    _scratch_folder(folder, bilm_fixtures, manylangs_fixtures,
                    paddle_baike_fixtures)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(dict(document=name, blocks=runnable)),
                    encoding="utf-8")
    shims, server_env = command_server
    env = user_env()
    env.update(
        PATH=os.pathsep.join([str(shims), os.path.dirname(sys.executable),
                              env.get("PATH", "")]),
        **server_env,
        BILM_KERAS_MODEL_MIRROR=mirror.url,
        BILM_KERAS_CACHE=str(folder / "cache"),
        TF_CPP_MIN_LOG_LEVEL="2",
        MPLBACKEND="Agg",
    )
    start = time.perf_counter()
    done = subprocess.run(
        [str(shims / "run-script"), str(REPO_ROOT / "tests" / "doc_blocks.py"),
         str(plan)],
        cwd=folder, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=900)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, (
        f"{name}: a block failed after {seconds:.0f} s:\n"
        + done.stdout[-6000:])
    # every runnable block ran
    assert done.stdout.count(f"--- {name}:") == len(runnable)
    print(done.stdout)  # each block's output and seconds, for -rP


def test_reading_finds_blocks_flags_and_paths():
    # the reader itself, on a document written here
    text = "\n".join([
        "Intro naming `bench/common.py` and [a doc](docs/none-such.md).",
        "",
        "```bash notest: it would delete everything",
        "rm -rf /",
        "```",
        "",
        "",
        "1. A list item:",
        "",
        "   ```python",
        "   x = 1",
        "   ```",
        "```text",
        "bin/does_not_exist.py",
        "```",
    ])
    blocks = code_blocks(text)
    assert [(b.language, b.flags, b.line, b.end_line, b.reason)
            for b in blocks] == [
        ("bash", ("notest",), 3, 5, "it would delete everything"),
        ("python", (), 10, 12, ""), ("text", (), 13, 15, "")]
    assert blocks[1].code == "x = 1\n" and blocks[1].runs
    assert not blocks[0].runs and not blocks[2].runs
    assert code_blocks("```python notest\nx\n```")[0].reason == ""
    assert named_repo_paths(text) == [
        (1, "bench/common.py"), (1, "docs/none-such.md"),
        (14, "bin/does_not_exist.py")]
    assert linked_files(text + "\n[x](https://a.b/c) [y](#top) "
                        "[z](../README.md#shapes)") == [
        (1, "docs/none-such.md"), (16, "../README.md")]
    assert repo_path_exists("bench/common.py")
    assert repo_path_exists("bench/NAME.py")  # a placeholder
    assert repo_path_exists("tests/*/test_*.py")
    assert not repo_path_exists("docs/none-such.md")
    assert not repo_path_exists("bin/does_not_exist.py")
