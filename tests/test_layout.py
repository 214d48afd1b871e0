"""The floor plan of rag/: wings by role whose imports run one way, downward, with no circle (deferred and
type-only imports counted too), and no symlink (one file, one module name; links break on Windows checkouts)."""

from __future__ import annotations

import ast

from helpers import ROOT

# Lowest first: a module may import its own wing or any wing above it in this list, never one below.
ORDER = ["rag.errors", "rag.config", "rag.text", "rag.store", "rag.query", "rag.search", "rag.explore",
         "rag.generation", "rag.answering", "rag.engine", "rag.evaluation", "rag.web", "rag.mcp_server", "rag.cli",
         "rag.__main__"]


def _wing(module: str) -> int:
    """The module's place in ORDER (-1: in no wing)."""
    return max((i for i, w in enumerate(ORDER) if module == w or module.startswith(w + ".")), default=-1)


def _imports() -> dict[str, set[str]]:
    """module -> the rag modules it imports anywhere in its source (top level, functions, TYPE_CHECKING)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "rag").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if rel.parts[1] == "data":
            continue
        name = ".".join(rel.parts).removesuffix(".__init__")
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rag":
                # `from rag.store import lock` imports the module rag.store.lock
                found |= {f"{node.module}.{a.name}" if (ROOT / node.module.replace(".", "/") / f"{a.name}.py").exists()
                          else node.module for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("rag.")}
        out[name] = found - {name, "rag"}
    return out


def test_every_module_belongs_to_a_wing_and_imports_only_downward():
    graph = _imports()
    assert len(graph) > 30
    unplaced = [m for m in graph if _wing(m) < 0 and m != "rag"]
    assert not unplaced, f"modules outside every wing of ORDER: {unplaced}"
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if m != "rag" and _wing(t) > _wing(m))
    assert not upward, "imports that run upward (a lower wing importing a higher one):\n" + "\n".join(upward)


def test_no_import_circle_even_through_deferred_imports():
    graph = _imports()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1  # on the current path
        for t in sorted(graph.get(m, ())):
            assert state.get(t) != 1, "import circle: " + " -> ".join(path[path.index(t):] + [t])
            if t not in state:
                visit(t, path + [t])
        state[m] = 2  # done: no circle through it

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_symlink_in_the_package_or_its_top_level_homes():
    links = [str(p.relative_to(ROOT)) for top in ("rag", "ui", "prompts") for p in (ROOT / top).rglob("*")
             if p.is_symlink()]
    assert not links
