"""Every ``bash`` and ``python`` block of README.md, CONTRIBUTING.md and
docs/*.md runs, so the documents cannot drift from the code.

One test per document (a failure names it). Its blocks run in order, in
a fresh interpreter (``tests/doc_blocks.py``), in a scratch folder of its
own that holds (the doc-block convention, CONTRIBUTING.md):

* bilm-tf's fixture model as ``options.json``, ``lm_weights.hdf5`` and
  ``vocab.txt``; a small text ``sentences.txt`` (one whitespace-tokenized
  sentence a line, English and segmented Chinese); a corpus
  ``corpus/train/*.txt`` and ``corpus/heldout/*.txt``; ELMoForManyLangs'
  tiny fixture model as released, ``zht.model/``; Paddle's Fluid (baike)
  fixture checkpoint, ``baike_checkpoint/``, and its vocabulary,
  ``vocabulary_min5k.txt`` (35 words, standing in for the release's);
* the repository's ``bin``, ``examples``, ``bench``, ``tests`` (bilm-tf's
  run fixtures) and usage scripts, linked, so a block reads as if run from the repository root
  (and writes nothing into it);
* ``bilm-keras`` on ``PATH``; ``BILM_KERAS_MODEL_MIRROR`` at a local
  server (127.0.0.1) that serves fixture models at every path of the
  registry (bilm-tf's fixture model for AllenNLP's English names,
  ELMoForManyLangs' tiny fixture model for the 44 languages, the baike
  fixture checkpoint for ``paddle-baike-zh``), and
  ``BILM_KERAS_CACHE`` in the folder: nothing touches the network.

A block whose info string says ``notest`` (``bash notest``) is not run;
the text within four lines of it must say why, with the words "not run".
A document that names a path of the repository that does not exist fails
too. The two set-up commands at the top of the README are such a block:
CI runs them (``.ci/run``).
"""

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

from doc_blocks import (
    code_blocks,
    linked_files,
    named_repo_paths,
    repo_path_exists,
    text_around,
)
from helpers import REPO_ROOT, user_env

DOCUMENTS = sorted(
    [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md"]
    + list((REPO_ROOT / "docs").glob("*.md")))

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


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS, ids=_relative)
def test_document(document, tmp_path, bilm_fixtures, manylangs_fixtures,
                  paddle_baike_fixtures, mirror):
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
    # a block that is not run says why
    silent = [f"{name}:{b.line}" for b in blocks
              if "notest" in b.flags
              and "not run" not in text_around(text, b).lower()]
    assert not silent, (
        "notest blocks whose text does not say why they are not run: "
        + ", ".join(silent))

    runnable = [dict(language=b.language, code=b.code, line=b.line)
                for b in blocks if b.runs]
    if not runnable:
        return

    folder = tmp_path / "scratch"
    folder.mkdir()
    _scratch_folder(folder, bilm_fixtures, manylangs_fixtures,
                    paddle_baike_fixtures)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(dict(document=name, blocks=runnable)),
                    encoding="utf-8")
    env = user_env()
    env.update(
        PATH=os.pathsep.join([os.path.dirname(sys.executable),
                              env.get("PATH", "")]),
        BILM_KERAS_MODEL_MIRROR=mirror.url,
        BILM_KERAS_CACHE=str(folder / "cache"),
        TF_CPP_MIN_LOG_LEVEL="2",
        MPLBACKEND="Agg",
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "doc_blocks.py"),
         str(plan)],
        cwd=folder, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=900)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, (
        f"{name}: a block failed after {seconds:.0f} s:\n"
        + done.stdout[-6000:])
    # every runnable block ran
    assert done.stdout.count(f"--- {name}:") == len(runnable)


def test_reading_finds_blocks_flags_and_paths():
    # the reader itself, on a document written here
    text = "\n".join([
        "Intro naming `bench/common.py` and [a doc](docs/none-such.md).",
        "",
        "```bash notest",
        "rm -rf /",
        "```",
        "Not run: it would delete everything.",
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
    assert [(b.language, b.flags, b.line, b.end_line) for b in blocks] == [
        ("bash", ("notest",), 3, 5), ("python", (), 10, 12),
        ("text", (), 13, 15)]
    assert blocks[1].code == "x = 1\n" and blocks[1].runs
    assert not blocks[0].runs and not blocks[2].runs
    assert "not run" in text_around(text, blocks[0]).lower()
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
