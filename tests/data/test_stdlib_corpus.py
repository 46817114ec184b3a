"""The no-download corpus built from the standard library's docstrings."""

import re

import pytest

from bilm_keras.data.corpus import count_tokens
from bilm_keras.data.stdlib_corpus import (
    _stdlib_sentences,
    docstring_sentences,
    tokenize,
    write_stdlib_corpus,
)


def test_tokenize_like_the_bilm_tf_fixture():
    assert tokenize("Return the value (or None), if you don't wait.") == [
        "return", "the", "value", "(", "or", "none", ")", ",", "if", "you",
        "don", "'t", "wait", "."]
    assert tokenize("Keep Case here.", lowercase=False) == [
        "Keep", "Case", "here", "."]
    # code, fragments and markup are not sentences
    assert tokenize("Call foo_bar() to start.") is None
    assert tokenize("lowercase start is a fragment.") is None
    assert tokenize("No final stop here") is None
    assert tokenize("Too short.") is None


def test_docstring_sentences_skip_code():
    doc = ("Compute things. It works well.\n\n"
           ">>> compute(1)\n2\n\n"
           "Args:\n    x: the input.\n\n"
           "A final sentence.")
    assert list(docstring_sentences(doc)) == [
        "Compute things.", "It works well.", "A final sentence."]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("stdlib")
    return out, write_stdlib_corpus(out, n_train_shards=3, seed=0)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_size_and_format(corpus):
    out, info = corpus
    assert len(info["train_files"]) == 3
    n = count_tokens(info["train_prefix"])
    assert n["n_files"] == 3
    assert n["n_sentences"] == info["n_train_sentences"]
    assert n["n_tokens"] == info["n_train_tokens"]
    assert n["n_skipped_lines"] == 0
    # a few thousand sentences, enough for a tiny biLM
    assert 2000 <= info["n_train_sentences"] <= 20000
    assert info["n_heldout_sentences"] >= 50
    held = count_tokens(info["heldout_prefix"])
    assert held["n_sentences"] == info["n_heldout_sentences"]
    train = set()
    for path in info["train_files"]:
        for line in open(path, encoding="utf-8"):
            # single-space separated lowercase tokens
            assert line == " ".join(line.split()) + "\n"
            assert line == line.lower()
            assert re.fullmatch(r"[a-z0-9'.(),;:!?\"\-\[\]%/+*&#$|~^]"
                                r"(.*)\n", line)
            train.add(line)
    # heldout sentences are not training sentences
    heldout = set(open(info["heldout_file"], encoding="utf-8"))
    assert not train & heldout


@pytest.mark.slow
def test_deterministic_and_seeded(corpus, tmp_path):
    out, info = corpus
    _stdlib_sentences.cache_clear()  # parse the sources again
    again = write_stdlib_corpus(tmp_path / "a", n_train_shards=3, seed=0)
    for p, q in zip(info["train_files"] + [info["heldout_file"]],
                    again["train_files"] + [again["heldout_file"]]):
        assert open(p, "rb").read() == open(q, "rb").read()
    other = write_stdlib_corpus(tmp_path / "b", n_train_shards=3, seed=1)
    assert (open(info["heldout_file"], "rb").read()
            != open(other["heldout_file"], "rb").read())


@pytest.mark.slow
def test_max_sentences_and_stale_shards(tmp_path):
    first = write_stdlib_corpus(tmp_path, n_train_shards=4,
                                max_sentences=200, seed=0)
    assert first["n_train_sentences"] + first["n_heldout_sentences"] == 200
    second = write_stdlib_corpus(tmp_path, n_train_shards=2,
                                 max_sentences=100, seed=0)
    # the glob only sees this call's shards
    assert count_tokens(second["train_prefix"])["n_files"] == 2
    assert count_tokens(second["train_prefix"])["n_sentences"] == (
        second["n_train_sentences"])
    with pytest.raises(ValueError, match="n_train_shards: expected an "
                                         "integer >= 1, found 0"):
        write_stdlib_corpus(tmp_path, n_train_shards=0)
    with pytest.raises(ValueError, match="gave 3 sentences"):
        write_stdlib_corpus(tmp_path, n_train_shards=3, max_sentences=3)


def test_docstrings_of_definitions_at_any_depth(tmp_path):
    # the statement-only walk finds what filtering ast.walk finds: defs
    # nested in if/else, try/except/finally, with, for/else, match, class
    # and function bodies, in source order
    source = '''"""Module doc."""
if True:
    def a():
        """In if."""
else:
    class B:
        """In else."""
        def c(self):
            """In a method."""
try:
    async def d():
        """In try."""
except ValueError:
    def e():
        """In except."""
finally:
    def f():
        """In finally."""
with open(__file__) as handle:
    for _ in ():
        pass
    else:
        def g():
            """In for-else."""
match 1:
    case 1:
        def h():
            """In a case."""
def outer():
    """Outer."""
    def inner():
        """Inner."""
    return lambda: inner
'''
    path = tmp_path / "nested.py"
    path.write_text(source, encoding="utf-8")
    from bilm_keras.data.stdlib_corpus import iter_docstrings

    assert list(iter_docstrings(str(path))) == [
        "Module doc.", "In if.", "In else.", "In a method.", "In try.",
        "In except.", "In finally.", "In for-else.", "In a case.", "Outer.",
        "Inner."]
