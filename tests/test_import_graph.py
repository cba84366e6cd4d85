"""Layering (STYLE.md item 1): imports flow one way, checked on the source with `ast`.

cosim ← everything; traces, netmodel → collectives → simcore ← policies (policies see only
simcore.api); calibration sits beside simcore. simcore (the engine) imports no policy, no
experiment and no CLI code. experiments (runner, sweeps, reports, reproductions) sits above
simcore and policies and composes them; cli on top; nothing imports cli, only cli imports
experiments. Any import of a package above is a failure: there is no registry injection or
import by string to get around a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = {"cosim", "traces", "netmodel", "collectives", "calibration", "simcore", "policies", "experiments", "cli"}

#: package → the packages (or exact modules) of ours it may import
ALLOWED = {
    "cosim": set(),
    "traces": {"cosim"},
    "netmodel": {"cosim"},
    "collectives": {"cosim", "netmodel"},
    "calibration": {"cosim", "netmodel", "collectives", "traces"},
    "simcore": {"cosim", "traces", "netmodel", "collectives", "calibration"},
    "policies": {"cosim", "simcore.api"},
    "experiments": {"cosim", "traces", "netmodel", "collectives", "calibration", "simcore", "policies"},
    "cli": OURS - {"cli"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in OURS}


def _allowed(pkg: str, module: str) -> bool:
    top = module.split(".")[0]
    if top == pkg:
        return True
    for rule in ALLOWED[pkg]:
        if module == rule or module.startswith(rule + ".") or (top == rule and "." not in rule):
            return True
    return False


@pytest.mark.parametrize("pkg", sorted(ALLOWED))
def test_layering(pkg):
    bad = []
    for path in sorted((REPO / pkg).rglob("*.py")):
        for mod in sorted(_imports(path)):
            if pkg == "experiments" and mod.startswith("policies"):
                # the runner resolves policy names through the registry only, never a concrete policy
                if mod not in {"policies", "policies.registry", "policies.registry.POLICIES", "policies.make"}:
                    bad.append(f"{path.relative_to(REPO)} imports {mod}")
                continue
            if not _allowed(pkg, mod):
                bad.append(f"{path.relative_to(REPO)} imports {mod}")
    assert not bad, "layering violated:\n" + "\n".join(bad)


@pytest.mark.parametrize("pkg", ["simcore", "experiments"])
def test_no_import_by_name(pkg):
    """A module named in a string is an import the layering test cannot see: the engine and the
    experiments layer import what they run directly (reproduction hooks are named in the catalog
    and must live in `experiments`)."""
    found = []
    for path in sorted((REPO / pkg).rglob("*.py")):
        text = path.read_text()
        if "__import__(" in text or ("import_module(" in text and path.name != "reproduction.py"):
            found.append(str(path.relative_to(REPO)))
    assert not found, f"imports by name in {found}"
