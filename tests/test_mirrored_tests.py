"""Every module of the package has its tests at the mirrored path
(``bilm_keras/data/batcher.py``: ``tests/data/test_batcher.py``) or a line
in tests/README.md's "Modules tested at another path" naming the tests
that cover it; the list names only modules without a mirrored test and
only test files that exist."""

import re

from helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "bilm_keras"
LIST = REPO_ROOT / "tests" / "README.md"
SECTION = "## Modules tested at another path"


def _mirrored_test(module) -> bool:
    relative = module.relative_to(PACKAGE)
    return (REPO_ROOT / "tests" / relative.parent
            / f"test_{relative.name}").is_file()


def _listed() -> dict:
    """tests/README.md's list: module (relative to bilm_keras/) -> the
    test files its line names."""
    text = LIST.read_text("utf-8")
    assert SECTION in text, f"{LIST}: no {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    listed = {}
    for item in re.split(r"\n\* ", section)[1:]:
        item = " ".join(item.split())
        modules, _, covered_by = item.partition(": ")
        tests = re.findall(r"`(tests/[\w/]+\.py)`", covered_by)
        for module in re.findall(r"`([\w/]+\.py)`", modules):
            assert module not in listed, f"{module} listed twice"
            listed[module] = tests
    return listed


def test_every_module_has_a_mirrored_test_or_a_line():
    listed = _listed()
    modules = {m.relative_to(PACKAGE).as_posix(): m
               for m in PACKAGE.rglob("*.py")
               if m.name not in ("__init__.py", "__main__.py")}
    untested = sorted(name for name, path in modules.items()
                      if not _mirrored_test(path) and name not in listed)
    assert not untested, (
        "no test at the mirrored path and no line in tests/README.md's "
        f"{SECTION!r}: {untested}")
    stale = sorted(name for name in listed
                   if name not in modules or _mirrored_test(modules[name]))
    assert not stale, (f"listed in {SECTION!r} but gone or tested at the "
                       f"mirrored path: {stale}")
    missing = sorted({test for tests in listed.values() for test in tests
                      if not (REPO_ROOT / test).is_file()})
    assert not missing, f"named in {SECTION!r}, no such test: {missing}"
