"""The user documents say nothing of how the project is built, and every
measured figure in them says where and when it was measured.

* No process words in any tracked Markdown file, nor in the comments and
  docstrings of the code (``bilm_keras``, ``bin``, ``bench``,
  ``examples``, ``fuzz``, ``tests``): the project's own issue numbers and
  issues ("the issue's figures"), "session", "bar" as in a quality bar,
  "this branch", other developers or engineers, agents and helpers'
  work, "we weighed", "the main job". An upstream project's issue
  (``bilm-tf issues #43``), a pytest fixture of session scope, a TF1
  session and a progress bar are not process words.
  README.md and docs/ name no aim of the project's either ("aimed at"),
  nor "this pool" of machines or "this project's" runs.
* Every figure in README.md and docs/ (a speed ratio such as ``2.25×``,
  tokens per second, a time in s, ms or µs, a size in MiB or GiB) names
  a machine (``AMD EPYC``, ``Xeon``, ``vCPU``, a GPU) and a date
  (``2026-11-24``) in its paragraph, list item or table row. A table row
  may take them from its table's header or from the paragraph that
  introduces the table (one that ends in a colon).
"""

import ast
import io
import re
import subprocess
import tokenize

import pytest

from helpers import REPO_ROOT

#: the folders whose Python comments and docstrings are read
CODE_FOLDERS = ("bilm_keras", "bin", "bench", "examples", "fuzz", "tests")
FIGURE_DOCUMENTS = ("README.md", "docs/*.md")
# docs/security.md's sizes and times are the readers' limits and what
# hostile files claim, not measurements of a machine; its campaign's
# counts name their machine and date all the same.
NOT_FIGURE_DOCUMENTS = ("docs/security.md",)

#: process words in code comments and docstrings as well as documents
CODE_PROCESS_WORDS = (
    r"""
    (?<!bilm-tf\ )(?<!allennlp\ )(?<!upstream\ )(?<!Paddle\ )
    (?<!TensorFlow\ )(?<!Keras\ )
    \bissues?\ +\#?\d+                             # our own issue numbers
    | \b(?:the|this|our)\ issues?(?:'s?)?(?!\w)
    | \bagents?'?(?!\w) | \bhelpers?'s?\ (?:work|jobs?)\b
    | \bwe\ weighed\b | \bmain\ job\b
    | \bthis\ branch\b | \bother\ developers?\b | \bdevelopers'
    | \bengineers?\b | \bworktrees?\b
    """)
CODE_WORDS = re.compile("(?ix)" + CODE_PROCESS_WORDS)
# Documents also say nothing of sessions or bars; code has TF1 sessions,
# pytest's session fixtures and progress bars in many forms.
PROCESS_WORDS = re.compile(
    "(?ix)" + CODE_PROCESS_WORDS + r"""
    | (?<!TF1\ )(?<!TensorFlow\ )(?<!\.)\bsessions?\b
      (?!\ +(?:fixtures?|scope|call)\b)            # pytest's or TF1's
    | (?<!progress\ )\bbars?\b                     # a quality bar
    """)
# In README.md and docs/ also the project's own aims and machines: a
# user reads what the code does, not what it was meant to reach.
GUIDE_WORDS = re.compile(r"(?i)\baimed at\b|\bthis pool\b|\bthis project's\b")

# A measured figure: a decimal speed ratio, a rate in tokens, a time in
# s, ms or µs, a memory size in MiB or GiB. Integer ratios ("3×" aimed
# at, "2 × 2 LSTMs") and sizes of files or downloads in MB or GB are not
# measurements of a machine.
NUMBER = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(
    rf"""(?x)
    \d\.\d+(?:\s*[–-]\s*\d+\.\d+)?\s*(?:×|x\b)
    | {NUMBER}\s*(?:real\s+)?tokens(?:/s\b|\s+(?:per|a)\s+second)
    | {NUMBER}(?:\s*[–-]\s*{NUMBER})?\s*(?:s|ms|µs)\b(?![-'])
    | {NUMBER}\s*(?:MiB|GiB)\b
    """)
MACHINE = re.compile(r"EPYC|Xeon|vCPU|\bGPUs?\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _tracked(*patterns):
    """The tracked files matching git pathspecs ``patterns``."""
    out = subprocess.run(["git", "ls-files", "--", *patterns],
                         cwd=REPO_ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [REPO_ROOT / name for name in out.splitlines()
            if (REPO_ROOT / name).exists()]


def comments_and_docstrings(source):
    """source: str. Python code. Yields ``(line_number, text)`` of every
    comment and every module, class and function docstring."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                for offset, line in enumerate(
                        first.value.value.splitlines()):
                    yield first.lineno + offset, line


def _process_words(lines, patterns):
    """``(line_number, match)`` of the process words in ``lines``, a
    match that a line break cuts (``the`` ending one line, ``issue's``
    starting the next) included, under the line it starts on."""
    lines = list(lines)
    found = []
    for i, (number, line) in enumerate(lines):
        following = ""
        if i + 1 < len(lines) and lines[i + 1][0] == number + 1:
            following = lines[i + 1][1].lstrip()
        joined = line + " " + following
        found += [(number, match.group(0)) for pattern in patterns
                  for match in pattern.finditer(joined)
                  if match.start() < len(line)]
    return found


def _documents(patterns):
    paths = []
    for pattern in patterns:
        paths.extend(sorted(REPO_ROOT.glob(pattern)))
    return paths


def _prose_lines(text):
    """text: str. Yields ``(line_number, line)`` outside fenced blocks
    and HTML comments."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            yield number, ""
            continue
        yield number, "" if fenced or line.startswith("<!--") else line


def units(text):
    """text: str. The figure-checking units of a Markdown document, as
    ``(line_number, context, body)``: a paragraph or list item is its own
    context and body. A table row is a body whose context adds the
    table's header and the paragraph that introduces it."""
    result = []
    block, start = [], 0
    table_context, last_paragraph = "", ""

    def close():
        nonlocal block, last_paragraph
        if block:
            paragraph = " ".join(block)
            result.append((start, paragraph, paragraph))
            last_paragraph = paragraph
        block = []

    for number, line in _prose_lines(text):
        stripped = line.strip()
        if stripped.startswith("|"):
            close()
            if not table_context:
                caption = last_paragraph if last_paragraph.endswith(
                    ":") else ""
                table_context = caption + " " + stripped
            elif not re.fullmatch(r"[|\s:-]+", stripped):
                result.append((number, stripped + " " + table_context,
                               stripped))
            continue
        if table_context:
            last_paragraph = ""
        table_context = ""
        starts_item = re.match(r"\s*(?:[*-]|\d+\.)\s", line)
        if not stripped or starts_item or stripped.startswith("#"):
            close()
            if stripped.startswith("#"):
                last_paragraph = ""
        if stripped and not stripped.startswith("#"):
            if not block:
                start = number
            block.append(stripped)
    close()
    return result


def figures_without_place_or_date(text):
    """text: str. ``(line_number, figures)`` of every unit whose figures
    name no machine or no date."""
    problems = []
    for number, context, body in units(text):
        figures = FIGURE.findall(body)
        if figures and not (MACHINE.search(context)
                            and DATE.search(context)):
            problems.append((number, figures))
    return problems


@pytest.mark.parametrize(
    "path", _tracked("*.md"),
    ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_no_process_words(path):
    patterns = [PROCESS_WORDS]
    if path in _documents(FIGURE_DOCUMENTS):
        patterns.append(GUIDE_WORDS)
    found = [f"{path.relative_to(REPO_ROOT)}:{number}: {word!r}"
             for number, word in _process_words(enumerate(
                 path.read_text("utf-8").splitlines(), 1), patterns)]
    assert not found, (
        "words about how the project is built, in a document for its "
        "users (say what is true of the code, not who did what when): "
        + "; ".join(found))


@pytest.mark.slow
def test_no_process_words_in_code_comments():
    found = []
    for path in _tracked(*(f"{folder}/*.py" for folder in CODE_FOLDERS)):
        if path.name == "test_user_documents.py":  # it lists the words
            continue
        lines = comments_and_docstrings(path.read_text("utf-8"))
        found += [f"{path.relative_to(REPO_ROOT)}:{number}: {word!r}"
                  for number, word in _process_words(lines, [CODE_WORDS])]
    assert not found, (
        "words about how the project is built, in a code comment or "
        "docstring (say why the code is so, not who asked for it): "
        + "; ".join(found))


def test_words_cut_by_a_line_break_are_found():
    lines = enumerate(["so this run does not settle the",
                       "issue's target, as the", "issue asks"], 1)
    found = _process_words(lines, [PROCESS_WORDS])
    assert found == [(1, "the issue's"), (2, "the issue")]


def test_comments_and_docstrings_are_read():
    source = ('"""Module (issue 38)."""\n'
              "x = 'issue 38 in a string is data'  # as the issue's item\n"
              "def f():\n    '''The agents' jobs.'''\n")
    found = _process_words(comments_and_docstrings(source), [CODE_WORDS])
    assert found == [(2, "the issue's"), (1, "issue 38"), (4, "agents'")]


@pytest.mark.parametrize(
    "text, words", [
        ("as issue 18 aimed", ["issue 18"]),
        ("Issues 36 and 38", ["Issues 36"]),
        ("This session ran on an EPYC", ["session"]),
        ("under the 1,144 MiB bar", ["bar"]),
        ("from the other developers' work on this branch",
         ["other developers", "this branch"]),
        ("other engineers' jobs", ["engineers"]),
        ("bilm-tf issues #43, #105", []),
        ("the session fixtures `fixture_bilm`", []),
        ("its TF1 session reads them; one session call per sentence", []),
        ("no placeholders or `tf.Session`", []),
        ("a progress bar on stderr", []),
        ("other agents' jobs kept the load at 4.7", ["agents'"]),
        ("load 1.5-2.4 from a helper's work", ["helper's work"]),
        ("The issue's figures; as the issue asks", ["The issue's",
                                                    "the issue"]),
        ("and we weighed it first; runs the main job", ["we weighed",
                                                        "main job"]),
        ("upstream issues #19, #55; Paddle issues 64989", []),
        ("a helper function in tests/helpers.py", []),
    ])
def test_process_words_found(text, words):
    assert [m.group(0) for m in PROCESS_WORDS.finditer(text)] == words


def test_guide_words_found():
    text = ("Short of the 2.5x aimed at; measured on the Xeon of this "
            "pool, as this project's runs showed")
    assert [m.group(0) for m in GUIDE_WORDS.finditer(text)] == [
        "aimed at", "this pool", "this project's"]


@pytest.mark.parametrize(
    "path", [path for path in _documents(FIGURE_DOCUMENTS)
             if path not in _documents(NOT_FIGURE_DOCUMENTS)],
    ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_every_figure_names_its_machine_and_date(path):
    problems = figures_without_place_or_date(path.read_text("utf-8"))
    assert not problems, "; ".join(
        f"{path.relative_to(REPO_ROOT)}:{number}: {figures} without a "
        "machine (AMD EPYC, Xeon, vCPU, GPU) and a date (YYYY-MM-DD) in "
        "its paragraph, list item or table row (or the row's table "
        "header or introducing paragraph): add the run's from "
        "bench/RESULTS.md" for number, figures in problems)


def test_the_figures_are_found():
    """The check above is not vacuous: it finds the figures the documents
    carry (the README's performance paragraph, every row of
    docs/performance.md's first table) and fails a figure alone."""
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    performance = (REPO_ROOT / "docs" / "performance.md").read_text(
        "utf-8")
    readme_figures = [FIGURE.findall(body) for _, _, body in units(readme)]
    assert sum(map(len, readme_figures)) >= 3, readme_figures
    rows = [body for _, _, body in units(performance)
            if body.startswith("| ") and FIGURE.search(body)]
    assert len(rows) >= 10, rows
    alone = ("Embedding runs at 1,873 tokens/s, 2.25× bilm-tf, in 2.5 s "
             "and 1,137 MiB.")
    assert figures_without_place_or_date(alone) == [
        (1, ["1,873 tokens/s", "2.25×", "2.5 s", "1,137 MiB"])]
    dated = alone + " (AMD EPYC, 2 vCPUs, 2026-11-24)"
    assert figures_without_place_or_date(dated) == []
    table = ("Measured on the AMD EPYC, 2026-11-24:\n\n"
             "| what | figure |\n|---|---|\n| speed | 2.25× |\n"
             "\n| what | figure |\n|---|---|\n| speed | 1.91× |\n")
    assert figures_without_place_or_date(table) == [(9, ["1.91×"])]
