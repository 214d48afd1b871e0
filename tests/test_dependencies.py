"""Every third-party package that the app's code imports directly is a declared dependency in pyproject.toml
(not just something another dependency happens to bring along); an import guarded by `except ImportError` may
come from an extra instead."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from helpers import ROOT


def imported_modules(package: str) -> dict[str, tuple[str, bool]]:
    """Top-level module names imported anywhere under `package` (absolute imports): one file using each, and
    whether every import of it is optional (inside a `try` that catches ImportError)."""
    found: dict[str, tuple[str, bool]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        optional = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers)
            for stmt in node.body for inner in ast.walk(stmt)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                where, was_optional = found.get(name.split(".")[0], (str(path.relative_to(ROOT)), True))
                found[name.split(".")[0]] = (where, was_optional and id(node) in optional)
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_direct_import_of_the_app_is_a_declared_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {normalized(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}
    extras = {normalized(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0])
              for specs in project["optional-dependencies"].values() for spec in specs}
    distributions = packages_distributions()
    undeclared = []
    for module, (where, optional) in sorted(imported_modules("rag").items()):
        if module in sys.stdlib_module_names or module in ("__future__", "rag"):
            continue
        provided_by = {normalized(d) for d in distributions.get(module, [])}
        if not provided_by & (declared | extras if optional else declared):
            undeclared.append(f"{module} ({where}; from {', '.join(sorted(provided_by)) or 'no installed package'})")
    assert not undeclared, "imported but not declared in pyproject.toml: " + "; ".join(undeclared)
