"""The documents' code blocks, read and run (``tests/test_docs.py``).

Reading (imported by the test): :func:`code_blocks` finds every fenced
block of a Markdown file with its language, its flags (the info string's
other words: ``notest``) and its line; :func:`named_repo_paths` every
path of this repository the text names (in prose, code spans, links and
blocks alike).

Running (``python tests/doc_blocks.py PLAN.json``, a fresh interpreter
per document, started by the test in the document's scratch folder):
the plan's blocks run in order; a ``bash`` block in its own ``bash -e -o
pipefail``, a ``python`` block in one namespace shared by the document's
Python blocks (like a notebook: a later block may use what an earlier one
defined). The first block that fails stops the run: its document and
line, then its output, and exit status 1.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pathlib
import re
import subprocess
import sys
import traceback

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

#: the languages whose blocks run
RUN_LANGUAGES = ("bash", "python")

#: a fence's opening line: three or more backticks, then the info string
_FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")


@dataclasses.dataclass(frozen=True)
class CodeBlock:
    """One fenced block: ``language`` (the info string's first word),
    ``flags`` (its other words), ``code``, ``line`` (1-based, the opening
    fence's) and ``end_line`` (the closing fence's)."""

    language: str
    flags: tuple
    code: str
    line: int
    end_line: int

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and "notest" not in self.flags


def code_blocks(text: str) -> list:
    """Every fenced block of a Markdown text, in order (indented fences,
    as in list items, included; their indentation removed)."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = match.groups()
        words = info.split()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent)
                        else line.lstrip())
            i += 1
        blocks.append(CodeBlock(
            language=words[0] if words else "", flags=tuple(words[1:]),
            code="\n".join(body) + "\n", line=start + 1, end_line=i + 1))
        i += 1
    return blocks


def text_around(text: str, block: CodeBlock, lines: int = 4) -> str:
    """The ``lines`` lines before a block's opening fence and after its
    closing one: where a ``notest`` block says why it is not run."""
    all_lines = text.splitlines()
    before = all_lines[max(0, block.line - 1 - lines): block.line - 1]
    after = all_lines[block.end_line: block.end_line + lines]
    return "\n".join(before + after)


#: a path of this repository as documents name it: a top-level folder of
#: the repository and what follows, or one of its top-level files
_REPO_PATH = re.compile(
    r"(?<![\w./~$-])("
    r"(?:bilm_keras|bin|bench|tests|docs|options|examples|\.ci)/"
    r"[\w./*-]*"
    r"|usage_\w+\.py|setup\.cfg|pyproject\.toml|CONTRIBUTING\.md"
    r")")

#: a placeholder in a named path (``bench/NAME.py``): any name matches
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*[A-Z]\b")


def named_repo_paths(text: str) -> list:
    """``[(line number, path)]``: every path of this repository that
    ``text`` names, trailing punctuation stripped. A path may hold a
    glob (``corpus/*``) or a placeholder in capitals (``bench/NAME.py``)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _REPO_PATH.finditer(line):
            path = match.group(1).rstrip(".,:;")
            found.append((number, path))
    return found


#: a Markdown link's target: ``[text](target)``
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def linked_files(text: str) -> list:
    """``[(line number, target)]``: every link of ``text`` to a file, by a
    path relative to the document (no scheme, no ``#anchor`` alone; an
    anchor after a path is dropped)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _LINK.finditer(line):
            target = match.group(1).split("#")[0]
            if target and "://" not in target \
                    and not target.startswith("mailto:"):
                found.append((number, target))
    return found


def repo_path_exists(path: str, root: pathlib.Path = REPO_ROOT) -> bool:
    """Whether ``path`` (relative to the repository root; globs and
    placeholders allowed) names something that exists."""
    pattern = _PLACEHOLDER.sub("*", path)
    if any(c in pattern for c in "*?["):
        return bool(glob.glob(str(root / pattern)))
    return (root / pattern).exists()


# ------------------------------------------------------------- the runner
def run_plan(plan: dict) -> int:
    """Runs ``plan["blocks"]`` (``language``, ``code``, ``line``) of
    ``plan["document"]`` in the current folder; returns the exit status."""
    namespace = {"__name__": "__main__"}
    document = plan["document"]
    for block in plan["blocks"]:
        where = f"{document}:{block['line']}"
        print(f"--- {where} ({block['language']})", flush=True)
        if block["language"] == "bash":
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", block["code"]],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print(done.stdout, end="", flush=True)
            if done.returncode != 0:
                print(f"FAILED: the bash block at {where} exited "
                      f"{done.returncode}", flush=True)
                return 1
        else:
            try:
                exec(compile(block["code"], where, "exec"), namespace)
            except BaseException:
                traceback.print_exc(file=sys.stdout)
                print(f"FAILED: the python block at {where} raised",
                      flush=True)
                return 1
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        status = run_plan(json.load(f))
    os._exit(status)  # TensorFlow's threads must not hold the exit
