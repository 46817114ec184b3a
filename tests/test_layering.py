"""The package's layers (``docs/architecture.md``), enforced: every import
of ``bilm_keras/`` and ``bin/`` (inside functions and under
``TYPE_CHECKING`` too) goes from a unit to itself or to a unit the table
allows, and no modules import each other, directly or through others.

Plain Python (``ast``): nothing is imported, so the check takes a moment
and needs no TensorFlow.
"""

import ast
import pathlib

from helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "bilm_keras"

#: unit -> the units it may import (besides itself), bottom to top
ALLOWED = {
    "bilm_keras._utils": set(),
    "bilm_keras.options": {"bilm_keras._utils"},
    # options files shipped by name: read as BiLMOptions
    "bilm_keras.presets": {"bilm_keras._utils", "bilm_keras.options"},
    "bilm_keras.layers": {"bilm_keras._utils", "bilm_keras.options"},
    "bilm_keras.data": {"bilm_keras._utils", "bilm_keras.options"},
    "bilm_keras.weights": {"bilm_keras._utils", "bilm_keras.options",
                           "bilm_keras.layers", "bilm_keras.data"},
    "bilm_keras.pretrained": {"bilm_keras._utils", "bilm_keras.options",
                              "bilm_keras.data", "bilm_keras.weights"},
    "bilm_keras.models": {"bilm_keras._utils", "bilm_keras.options",
                          "bilm_keras.layers", "bilm_keras.data",
                          "bilm_keras.weights"},
}
#: embedding: also pretrained, for the Beam workers, which resolve a
#: published model's name on their own machines (embedding.beam_inference)
ALLOWED["bilm_keras.embedding"] = (set(ALLOWED["bilm_keras.models"])
                                   | {"bilm_keras.models",
                                      "bilm_keras.pretrained"})
#: save_dirs: a trained run read back, below the facade that reads it
ALLOWED["bilm_keras.save_dirs"] = (set(ALLOWED["bilm_keras.models"])
                                   | {"bilm_keras.models"})
#: the facade, then the applications of everything below them
_ABOVE = ["bilm_keras.bidirectional_language_model", "bilm_keras.training",
          "bilm_keras.export", "bilm_keras.keras_layer", "bilm_keras.serving",
          "bilm_keras.cli",
          "bilm_keras"]
for _k, _unit in enumerate(_ABOVE):
    ALLOWED[_unit] = set(ALLOWED) - set(_ABOVE[_k:]) | set(_ABOVE[:_k])
#: the bilm-tf-named scripts are thin aliases of the command
ALLOWED["bin"] = {"bilm_keras.cli"}


def _module_name(path: pathlib.Path) -> str:
    if path.parent == REPO_ROOT / "bin":
        return "bin." + path.stem
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources():
    """``{module name: path}`` of every file checked."""
    files = sorted(PACKAGE.rglob("*.py")) + sorted(
        (REPO_ROOT / "bin").glob("*.py"))
    return {_module_name(p): p for p in files if "__pycache__" not in p.parts}


MODULES = _sources()


def _imports(module: str, path: pathlib.Path):
    """``(line, imported module)`` of every bilm_keras import in ``path``;
    ``from A import B`` counts as importing ``A.B`` when that is a module."""
    package = module if path.name == "__init__.py" else module.rpartition(
        ".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, full if full in MODULES else base


def _unit(module: str) -> str:
    """The layer a module belongs to: its top-level package or module
    under ``bilm_keras`` (``bilm_keras`` itself for ``__init__.py``), or
    ``bin``."""
    parts = module.split(".")
    if parts[0] == "bin":
        return "bin"
    return ".".join(parts[:2])


def _edges():
    """``(module, line, imported module)`` of every import between checked
    modules."""
    for module, path in MODULES.items():
        for line, target in _imports(module, path):
            if target.split(".")[0] == "bilm_keras":
                yield module, line, target


def test_every_unit_is_in_the_table():
    units = {_unit(m) for m in MODULES}
    assert units <= set(ALLOWED), (
        f"place {sorted(units - set(ALLOWED))} in ALLOWED and in "
        "docs/architecture.md")
    assert {"bilm_keras._utils", "bilm_keras.embedding",
            "bilm_keras.bidirectional_language_model"} <= units


def test_the_table_is_layered():
    # the allowed imports themselves form no cycle: each unit may import
    # only units placed below it
    placed = []
    remaining = dict(ALLOWED)
    while remaining:
        ready = [u for u, deps in remaining.items() if deps <= set(placed)]
        assert ready, f"the table has a cycle among {sorted(remaining)}"
        placed += sorted(ready)
        for u in ready:
            del remaining[u]
    assert placed.index("bilm_keras.embedding") > placed.index(
        "bilm_keras.models")
    assert placed.index("bilm_keras.bidirectional_language_model") > max(
        placed.index(u) for u in ("bilm_keras.models", "bilm_keras.weights",
                                  "bilm_keras.embedding",
                                  "bilm_keras.pretrained"))


def test_no_import_goes_up():
    wrong = []
    for module, line, target in _edges():
        source, dest = _unit(module), _unit(target)
        if dest == "bilm_keras" and target != "bilm_keras":
            continue  # (never: a name under bilm_keras is in some unit)
        if dest != source and dest not in ALLOWED[source]:
            wrong.append(f"{MODULES[module].relative_to(REPO_ROOT)}:{line}: "
                         f"{source} imports {target} ({dest})")
    assert not wrong, "imports the layers do not allow:\n" + "\n".join(wrong)


def test_no_import_cycle():
    graph = {m: set() for m in MODULES}
    for module, _, target in _edges():
        if target in graph and target != module:
            graph[module].add(target)
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, "modules that import each other: " + "; ".join(
        " <-> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
    return found


def test_the_checker_sees_an_upward_import_and_a_cycle():
    # the check itself can fail: a weights module importing models, and
    # two modules importing each other
    assert "bilm_keras.models" not in ALLOWED["bilm_keras.weights"]
    assert _unit("bilm_keras.models.bilm_backbone") == "bilm_keras.models"
    assert _unit("bin.train_elmo") == "bin"
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(map(sorted, _strongly_connected(graph))) == [
        ["a", "b", "c"], ["d"]]
