"""A small tokenized English corpus that every Python installation has.

The docstrings of the standard library's pure-Python modules are read
with :mod:`ast` from the source files. Nothing is imported or executed.
They are split into sentences and tokenized like the bilm-tf training
fixture: tokens separated by single spaces, punctuation as tokens of its
own, lowercased by default. The result is deterministic for a given
Python version and needs no download. At thousands of sentences, it is
large enough for a tiny biLM to reach a meaningful heldout perplexity in
a minute or two on a laptop CPU.
"""

from __future__ import annotations

import ast
import functools
import os
import random
import re
import sysconfig
import warnings
from typing import Iterator, List, Optional

from bilm_keras._utils.atomic_files import write_text_atomic
from bilm_keras._utils.settings import check_int

# Modules whose docstrings are English prose (not generated tables, not
# tests). Sorted; a module missing from this Python version is skipped.
STDLIB_MODULES = (
    "_collections_abc", "_pydecimal", "_pyio", "abc", "argparse", "ast",
    "asyncio/base_events", "asyncio/events", "asyncio/futures",
    "asyncio/locks", "asyncio/queues", "asyncio/streams", "asyncio/tasks",
    "base64", "bdb", "bisect", "bz2", "calendar", "cmd", "code", "codecs",
    "codeop", "collections/__init__", "colorsys", "concurrent/futures/_base",
    "configparser", "contextlib", "copy", "copyreg", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "dis", "doctest",
    "email/_header_value_parser", "email/message", "email/utils",
    "enum", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "getopt", "getpass", "gettext", "glob", "gzip", "hashlib",
    "heapq", "hmac", "html/parser", "http/client", "http/cookiejar",
    "http/server", "imaplib", "importlib/__init__", "importlib/_bootstrap",
    "importlib/_bootstrap_external", "inspect", "ipaddress",
    "json/__init__", "json/decoder", "json/encoder", "linecache", "locale",
    "logging/__init__", "logging/handlers", "lzma", "mailbox", "mimetypes",
    "multiprocessing/connection", "multiprocessing/managers",
    "multiprocessing/pool", "multiprocessing/process", "netrc", "ntpath",
    "numbers", "operator", "optparse", "os", "pathlib", "pathlib/__init__",
    "pathlib/_abc", "pathlib/_local", "pdb", "pickle", "pickletools",
    "pkgutil", "platform", "plistlib", "poplib", "posixpath", "pprint",
    "profile", "pstats", "pydoc", "queue", "quopri", "random", "re",
    "re/__init__", "re/_parser", "reprlib", "rlcompleter", "sched",
    "secrets", "selectors", "shelve", "shlex", "shutil", "signal", "site",
    "smtplib", "socket", "socketserver", "ssl", "stat", "statistics",
    "string", "subprocess", "symtable", "tabnanny", "tarfile", "tempfile",
    "textwrap", "threading", "timeit", "token", "tokenize", "trace",
    "traceback", "tracemalloc", "types", "typing", "unittest/case",
    "unittest/loader", "unittest/mock", "unittest/result",
    "unittest/runner", "unittest/suite", "urllib/parse", "urllib/request",
    "uuid", "warnings", "wave", "weakref", "webbrowser",
    "xml/dom/minidom", "xml/etree/ElementTree", "xml/sax/handler",
    "zipfile", "zipfile/__init__", "zipimport",
)

# a sentence ends at . ! or ? followed by whitespace and an upper-case
# letter, a quote or a bracket
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
# words (with inner apostrophes or hyphens split off below), numbers, or
# any single punctuation character
_TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|[0-9]+(?:\.[0-9]+)?|[^\w\s]")
# lines that are code, tables or reST markup rather than prose
_SKIP_LINE = re.compile(
    r"^\s*(>>>|\.\.\.|\.\. |:[a-z]+:|[-=~*^+#]{3,}|\||\$ |[A-Za-z_.]+\(.*\)"
    r"\s*(->.*)?$)"
)


def stdlib_dir() -> str:
    """The folder of the standard library's Python sources."""
    return sysconfig.get_paths()["stdlib"]


def iter_docstrings(path: str) -> Iterator[str]:
    """The module, class and function docstrings of one source file, in
    source order, parsed with :mod:`ast` (the module is not imported)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in old sources
        tree = ast.parse(source, filename=path)
    nodes = [tree] + list(_definitions(tree))
    nodes.sort(key=lambda n: getattr(n, "lineno", 0))
    for node in nodes:
        doc = ast.get_docstring(node, clean=True)
        if doc:
            yield doc


_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# the fields that hold statements (ExceptHandler and match_case nodes hold
# statements in their body)
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _definitions(tree: ast.AST) -> Iterator[ast.AST]:
    """Every function and class definition in ``tree``, at any depth.

    A definition is a statement, so only statement lists are walked, not
    expressions: the same nodes as filtering ``ast.walk`` (every node),
    in a fifth of the time.
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        for field in _STATEMENT_FIELDS:
            children = getattr(node, field, None)
            if not isinstance(children, list):
                continue  # e.g. a Lambda's or an IfExp's body
            for child in children:
                if isinstance(child, _DEFINITION):
                    yield child
                stack.append(child)


def docstring_sentences(doc: str) -> Iterator[str]:
    """Prose sentences of a docstring: paragraphs without code, doctest or
    markup lines, joined and split at sentence ends."""
    for paragraph in re.split(r"\n\s*\n", doc):
        lines = paragraph.splitlines()
        if any(_SKIP_LINE.match(line) for line in lines):
            continue
        # indented blocks are examples or argument tables
        if any(line.startswith((" ", "\t")) for line in lines):
            continue
        text = " ".join(line.strip() for line in lines)
        for sentence in _SENTENCE_END.split(text):
            yield sentence.strip()


def tokenize(sentence: str, lowercase: bool = True) -> Optional[List[str]]:
    """Tokens of a prose sentence, or None when it does not look like one.

    Kept: 4 to 40 tokens, starting with a capital letter, ending with ``.``,
    ``!`` or ``?``, at least 70% alphabetic tokens, no code identifiers
    (``snake_case``, ``CamelCase.attr``, ``f()``).
    """
    if not sentence or not sentence[0].isupper():
        return None
    if sentence[-1] not in ".!?":
        return None
    if re.search(r"\w_\w|\w\.\w|\(\)|[`{}<>=@\\]|\w\[", sentence):
        return None
    if not sentence.isascii():
        return None
    tokens = []
    for tok in _TOKEN.findall(sentence):
        # "don't" -> "don 't" is what the bilm-tf fixture style (from a
        # PTB-like tokenizer) would give: split the clitic off
        if "'" in tok and tok[0].isalpha():
            head, tail = tok.split("'", 1)
            tokens.extend([head, "'" + tail])
        else:
            tokens.append(tok)
    if not 4 <= len(tokens) <= 40:
        return None
    n_alpha = sum(any(ch.isalpha() for ch in t) for t in tokens)
    if n_alpha < 0.7 * len(tokens):
        return None
    if lowercase:
        tokens = [t.lower() for t in tokens]
    return tokens


def stdlib_sentences(lowercase: bool = True,
                     modules=STDLIB_MODULES) -> List[str]:
    """Distinct tokenized sentences (space-joined) of the stdlib modules'
    docstrings, in module order, then source order."""
    return list(_stdlib_sentences(lowercase, tuple(modules)))


@functools.lru_cache(maxsize=4)
def _stdlib_sentences(lowercase: bool, modules: tuple) -> tuple:
    # parsing ~150 modules takes seconds: once per process is enough
    root = stdlib_dir()
    seen = set()
    sentences = []
    for module in modules:
        path = os.path.join(root, *module.split("/")) + ".py"
        if not os.path.isfile(path):
            continue
        try:
            docs = list(iter_docstrings(path))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for doc in docs:
            for raw in docstring_sentences(doc):
                tokens = tokenize(raw, lowercase=lowercase)
                if tokens is None:
                    continue
                sentence = " ".join(tokens)
                if sentence not in seen:
                    seen.add(sentence)
                    sentences.append(sentence)
    return tuple(sentences)


def _write_lines(path: str, lines: List[str]) -> None:
    write_text_atomic(path, "".join(line + "\n" for line in lines))


def write_stdlib_corpus(out_dir, *, n_train_shards: int = 2,
                        max_sentences: Optional[int] = None,
                        heldout_fraction: float = 0.05, seed: int = 0,
                        lowercase: bool = True) -> dict:
    """Write the stdlib docstring corpus as training shards and a heldout
    file.

    Sentences are shuffled with ``seed``, so train and heldout come from
    the same modules, and optionally cut to ``max_sentences``. Then the
    first ``heldout_fraction``, at least one sentence, becomes the heldout
    file. The rest is dealt round-robin into the training shards.

    Args:
        out_dir: folder to write ``train/shard_<i>.txt`` and
            ``heldout/heldout.txt`` into. It is created, and the files are
            written atomically.
        n_train_shards: number of training files.
        max_sentences: keep at most this many sentences. None keeps all.
        heldout_fraction: share of the sentences held out.
        seed: shuffling seed. The same seed on the same Python gives the
            same files.
        lowercase: lowercase every token, as the bilm-tf fixture corpus.

    Returns:
        dict with ``train_prefix`` and ``heldout_prefix``, both globs, and
        ``train_files``, ``heldout_file``, ``n_train_sentences``,
        ``n_heldout_sentences``, ``n_train_tokens``, ``n_heldout_tokens``.
    """
    check_int("n_train_shards", n_train_shards, 1)
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction: expected a number in (0, 1), "
                         f"found {heldout_fraction!r}")
    sentences = stdlib_sentences(lowercase=lowercase)
    random.Random(seed).shuffle(sentences)
    if max_sentences is not None:
        sentences = sentences[:max_sentences]
    n_heldout = max(1, int(round(heldout_fraction * len(sentences))))
    if len(sentences) < n_heldout + n_train_shards:
        raise ValueError(
            f"the standard library at {stdlib_dir()} gave {len(sentences)} "
            f"sentences (max_sentences={max_sentences}); expected at least "
            f"{n_heldout + n_train_shards} for {n_train_shards} training "
            "shard(s) and a heldout file"
        )
    heldout, train = sentences[:n_heldout], sentences[n_heldout:]
    out_dir = os.fspath(out_dir)
    train_dir = os.path.join(out_dir, "train")
    heldout_dir = os.path.join(out_dir, "heldout")
    os.makedirs(train_dir, exist_ok=True)
    os.makedirs(heldout_dir, exist_ok=True)
    train_files = []
    for i in range(n_train_shards):
        path = os.path.join(train_dir, f"shard_{i:03d}.txt")
        _write_lines(path, train[i::n_train_shards])
        train_files.append(path)
    # shards of an earlier call with more shards would match the glob
    for name in os.listdir(train_dir):
        path = os.path.join(train_dir, name)
        if (re.fullmatch(r"shard_\d+\.txt", name)
                and path not in train_files):
            os.remove(path)
    heldout_file = os.path.join(heldout_dir, "heldout.txt")
    _write_lines(heldout_file, heldout)
    return dict(
        train_prefix=os.path.join(train_dir, "shard_*.txt"),
        heldout_prefix=os.path.join(heldout_dir, "heldout.txt"),
        train_files=train_files,
        heldout_file=heldout_file,
        n_train_sentences=len(train),
        n_heldout_sentences=len(heldout),
        n_train_tokens=sum(len(s.split()) for s in train),
        n_heldout_tokens=sum(len(s.split()) for s in heldout),
    )
