"""docs/architecture.md names every module of the package, each in the
bullet of its unit ("What each unit holds"): ``bilm_keras/weights/
paddle_model.py`` is named as `` `paddle_model` `` or
`` `paddle_model.py` `` in the bullet that starts with `` `weights/` ``,
and a top-level module such as ``options.py`` has a bullet of its own."""

import re

from helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "bilm_keras"
DOCUMENT = REPO_ROOT / "docs" / "architecture.md"
SECTION = "What each unit holds:"


def unit_bullets(text):
    """text: str. The "What each unit holds" bullets as a dict from the
    unit a bullet starts with (``weights/``, ``options.py``) to its
    text."""
    assert SECTION in text, f"{DOCUMENT}: no {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n\n", 2)[1]
    bullets = {}
    for item in re.split(r"^\* ", section, flags=re.M)[1:]:
        unit = re.match(r"`([\w/.]+)`", item)
        assert unit, f"{DOCUMENT}: a unit's bullet starts {item[:40]!r}"
        bullets[unit.group(1)] = " ".join(item.split())
    return bullets


def unnamed_modules(text, modules):
    """text: str. modules: paths relative to ``bilm_keras/``. Those the
    document does not name in their unit's bullet, each with what to
    add."""
    bullets = unit_bullets(text)
    missing = []
    for module in sorted(modules):
        unit, _, name = module.rpartition("/")
        if not unit:
            if module not in bullets:
                missing.append(f"{module}: a bullet '* `{module}`: ...'")
            continue
        bullet = bullets.get(unit + "/")
        stem = name.removesuffix(".py")
        if bullet is None:
            missing.append(f"{module}: a bullet '* `{unit}/`: ...' that "
                           f"names `{stem}`")
        elif not re.search(rf"`{re.escape(stem)}(?:\.py)?`", bullet):
            missing.append(f"{module}: `{stem}` and what it holds, in "
                           f"the bullet '* `{unit}/`'")
    return missing


def _modules():
    return [path.relative_to(PACKAGE).as_posix()
            for path in PACKAGE.rglob("*.py")
            if path.name not in ("__init__.py", "__main__.py")]


def test_every_module_is_named():
    missing = unnamed_modules(DOCUMENT.read_text("utf-8"), _modules())
    assert not missing, (
        "docs/architecture.md, \"What each unit holds\", does not name "
        "these modules; add: " + "; ".join(missing))


def test_a_module_not_named_is_found():
    text = DOCUMENT.read_text("utf-8")
    assert len(unit_bullets(text)) >= 12
    modules = ["weights/paddle_model.py", "weights/no_such_reader.py",
               "no_such_unit/targets.py", "options.py", "no_such_module.py"]
    assert unnamed_modules(text, modules) == [
        "no_such_module.py: a bullet '* `no_such_module.py`: ...'",
        "no_such_unit/targets.py: a bullet '* `no_such_unit/`: ...' that "
        "names `targets`",
        "weights/no_such_reader.py: `no_such_reader` and what it holds, in "
        "the bullet '* `weights/`'"]
