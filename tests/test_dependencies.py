"""Every third-party module the installed packages import is a declared dependency.

A module imported at the top of a package module must be in `[project] dependencies`: a plain
`pip install .` has nothing else, and `cosim simulate` imports those modules. A module imported
only inside a function (matplotlib, torch, ray, networkx) must be in some extra, unless the import
is guarded by `except ImportError` (an optional nicety such as pynvml's clock readings). The test
environment has every extra installed, so a missing declaration would otherwise pass here and
fail on a user's machine (e.g. `click`, which only `ray[default]` happened to bring in).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = ("cosim", "simcore", "netmodel", "collectives", "calibration", "policies", "traces", "experiments", "cli")


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(top-level modules imported at module level, those imported anywhere else)."""
    top, nested = set(), set()

    def names(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name.split(".")[0] for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            return [node.module.split(".")[0]]
        return []

    module_level = set()
    for node in tree.body:
        stack = [node]
        while stack:  # module-level `if`/`try` blocks still run at import
            n = stack.pop()
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                continue  # annotations only: never imported at run time
            if isinstance(n, (ast.If, ast.Try)):
                stack += [*n.body, *getattr(n, "orelse", []), *getattr(n, "finalbody", []),
                          *[s for h in getattr(n, "handlers", []) for s in h.body]]
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                module_level.add(id(n))
                top.update(names(n))
    guarded = set()  # `try: import x` / `except ImportError` (or broader): optional by construction
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is None or any(n in ast.unparse(h.type) for n in ("ImportError", "Exception"))
                for h in node.handlers):
            guarded.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in module_level | guarded:
            nested.update(names(node))  # TYPE_CHECKING imports too: their extra must exist
    return top, nested


@cache
def _all_distributions() -> dict[str, list[str]]:
    return packages_distributions()  # reads every installed RECORD: slow, so only when needed


def _distributions_of(module: str) -> set[str]:
    try:  # most import names are their distribution's name
        return {distribution(module).metadata["Name"].lower().replace("_", "-")}
    except PackageNotFoundError:
        return {d.lower().replace("_", "-") for d in _all_distributions().get(module, [module])}


def _third_party(modules: set[str]) -> dict[str, set[str]]:
    """module → its distributions, for modules that are neither stdlib nor ours."""
    return {m: _distributions_of(m) for m in modules
            if m not in sys.stdlib_module_names and m not in PACKAGES and m != "__future__"}


def test_every_imported_distribution_is_declared() -> None:
    required = {_dist_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = {_dist_name(r) for reqs in PYPROJECT["project"]["optional-dependencies"].values() for r in reqs}
    missing_required, missing_extra = [], []
    for pkg in PACKAGES:
        for f in sorted((REPO / pkg).rglob("*.py")):
            top, nested = _imports(ast.parse(f.read_text(encoding="utf-8")))
            rel = f.relative_to(REPO)
            for m, ds in _third_party(top).items():
                if not ds & required:
                    missing_required.append(f"{rel}: {m} ({', '.join(sorted(ds))})")
            for m, ds in _third_party(nested - top).items():
                if not ds & (required | extras):
                    missing_extra.append(f"{rel}: {m} ({', '.join(sorted(ds))})")
    assert not missing_required, "imported at module level but not in [project] dependencies:\n" + "\n".join(
        missing_required)
    assert not missing_extra, "imported lazily but in no dependency or extra:\n" + "\n".join(missing_extra)
