"""The documents' code blocks, read and run (``tests/test_docs.py``).

Reading (imported by the test): :func:`code_blocks` finds every fenced
block of a Markdown file with its language, its flags (the info string's
other words: ``notest``, and after it the reason the block is not run)
and its line; :func:`table_commands` every whole command in a table
cell; :func:`named_repo_paths` every path of this repository the
text names (in prose, code spans, links and blocks alike);
:func:`named_flags` every flag it gives one of the project's commands.

Running (``python tests/doc_blocks.py PLAN.json``, a fresh interpreter
per document, started by the test in the document's scratch folder):
the plan's blocks run in order; a ``bash`` block in its own ``bash -e -o
pipefail``, a ``python`` block in one namespace shared by the document's
Python blocks (like a notebook: a later block may use what an earlier one
defined). Each block's output follows its document and line, then the
seconds it took. The first block that fails stops the run: its document
and line, then its output, and exit status 1.
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
import time
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
    fence's), ``end_line`` (the closing fence's) and ``reason``: why a
    ``notest`` block is not run, the info string after ``notest``
    (```` ```bash notest: it needs a Slurm cluster ````; Markdown shows
    only the language)."""

    language: str
    flags: tuple
    code: str
    line: int
    end_line: int
    reason: str = ""

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and "notest" not in self.flags


#: a ``notest`` flag and the reason after it
_NOTEST = re.compile(r"(?:^|\s)notest\b:?\s*(.*)$")


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
        notest = _NOTEST.search(info)
        blocks.append(CodeBlock(
            language=words[0] if words else "",
            flags=("notest",) if notest else tuple(words[1:]),
            code="\n".join(body) + "\n", line=start + 1, end_line=i + 1,
            reason=notest.group(1).strip() if notest else ""))
        i += 1
    return blocks


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


#: how a document runs one of this project's commands: ``bilm-keras
#: SUB``, ``python -m bilm_keras SUB`` or a ``bin/`` alias
_INVOCATION = re.compile(
    r"(?:\bbilm-keras|python3? -m bilm_keras(?:\.cli)?)\s+([a-z][a-z-]*)"
    r"|\bbin/(\w+\.py)")

#: a flag as documents write it
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")

#: a code span in prose (it may wrap onto the next line)
_CODE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")

#: where one shell command ends and the next begins
_COMMAND_END = re.compile(r"\||;|&&|\$\(|\)|\bthen\b|\bdo\b")


@dataclasses.dataclass(frozen=True)
class NamedFlag:
    """A flag a document gives one of the project's commands: ``command``
    (a subcommand's name, or the ``bin/`` alias as written), ``flag``
    (``--checkpoint``) and ``line`` (1-based)."""

    line: int
    command: str
    flag: str


def _flags_of_command(text: str, line: int, subcommands,
                      aliases) -> list:
    """The flags each invocation in one shell command line gives."""
    found = []
    for command in _COMMAND_END.split(text.split(" #")[0]):
        match = _INVOCATION.search(command)
        if not match:
            continue
        name = match.group(1) or match.group(2)
        if match.group(1) and name not in subcommands:
            continue  # `bilm-keras --help`, prose
        if match.group(2) and name not in aliases:
            continue  # another bin/ script (or none: the path test says)
        for flag in _FLAG.findall(command[match.end():]):
            found.append(NamedFlag(line, name, flag))
    return found


def named_flags(text: str, subcommands, aliases=()) -> list:
    """Every flag ``text`` gives one of the project's commands, as
    :class:`NamedFlag`: in code blocks of every language but ``text`` and
    ``json`` (run or not: a ``notest`` block must be right too), each
    line continued with ``\\`` read as one; and in prose, each code span
    that starts with a subcommand's name or an invocation (```restart
    --checkpoint```, ```bilm-keras embed --average```, ```bin/restart.py
    --save_dir```). ``subcommands``: the subcommands' names; ``aliases``:
    the ``bin/`` scripts' file names."""
    found = []
    lines = text.splitlines()
    blanked = list(lines)
    for block in code_blocks(text):
        for i in range(block.line - 1, min(block.end_line, len(lines))):
            blanked[i] = ""  # prose only, below: line numbers kept
        if block.language in ("text", "json"):
            continue  # outputs and files, not commands
        number, joined = block.line + 1, ""
        for k, line in enumerate(block.code.splitlines()):
            if not joined:
                number = block.line + 1 + k
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            found += _flags_of_command(joined + line, number, subcommands,
                                       aliases)
            joined = ""
    prose = "\n".join(blanked)
    names = "|".join(re.escape(n) for n in sorted(subcommands, key=len,
                                                   reverse=True))
    starts = re.compile(rf"^(?:{names})(?=\s|$)")
    for match in _CODE_SPAN.finditer(prose):
        span = " ".join(match.group(1).split())
        number = prose.count("\n", 0, match.start()) + 1
        if span.startswith("--"):
            found.append(NamedFlag(number, "", _FLAG.match(span).group(1)))
            continue
        if starts.match(span):
            span = "bilm-keras " + span
        found += _flags_of_command(span, number, subcommands, aliases)
    return sorted(found, key=lambda f: (f.line, f.command, f.flag))


#: flags of other programs that documents name alone, in a code span
FOREIGN_FLAGS = {
    "--signal": "Slurm's sbatch (long-runs.md)",
    "--direct_num_workers": "Apache Beam's DirectRunner (beam.md)",
}


def unknown_flags(named, flags_by_command: dict, *,
                  other_flags=frozenset()) -> list:
    """The :class:`NamedFlag` of ``named`` that their command lacks.

    ``flags_by_command``: each subcommand's (or ``bin/`` alias's) option
    strings. A flag named alone (``command`` empty) must be a flag of some
    subcommand, of ``other_flags`` (the benchmarks') or of
    :data:`FOREIGN_FLAGS`. After ``--runner``, ``embed`` hands the flags
    it does not know to Apache Beam, as the command itself does."""
    every = set().union(*flags_by_command.values()) | set(other_flags) \
        | set(FOREIGN_FLAGS)
    unknown, beam_lines = [], {f.line for f in named
                               if f.flag == "--runner"}
    for f in named:
        known = (every if not f.command
                 else flags_by_command.get(f.command, set()))
        if f.flag in known or (f.line in beam_lines
                               and f.command == "embed"):
            continue
        unknown.append(f)
    return unknown


def table_commands(text: str, is_command) -> list:
    """``[(line number, command)]``: every code span in a table cell that
    invokes the project (``bilm-keras SUB ...``) and that
    ``is_command(argv)`` takes for a whole command (its parser accepts
    it: every required flag, every value), in order. A span that only
    names a command or a flag (```bilm-keras embed --precision```) is a
    reference, not a command, and is left out."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        for match in _CODE_SPAN.finditer(line):
            span = " ".join(match.group(1).split())
            if span.startswith("bilm-keras ") and is_command(
                    span.split()[1:]):
                found.append((number, span))
    return found


# ------------------------------------------------------------- the runner
def run_plan(plan: dict) -> int:
    """Runs ``plan["blocks"]`` (``language``, ``code``, ``line``) of
    ``plan["document"]`` in the current folder; returns the exit status."""
    namespace = {"__name__": "__main__"}
    document = plan["document"]
    for block in plan["blocks"]:
        where = f"{document}:{block['line']}"
        print(f"--- {where} ({block['language']})", flush=True)
        start = time.perf_counter()
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
        print(f"... {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        status = run_plan(json.load(f))
    os._exit(status)  # TensorFlow's threads must not hold the exit
