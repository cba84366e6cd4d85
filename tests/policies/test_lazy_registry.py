"""The policy registry loads a policy's module only when its name is looked up.

`policies.BUILTIN` says which module registers which names; the decorators beside the classes
(`@POLICIES.register("fifo")`) stay the one place a name is given to a class. These tests
check the table against the decorators in the source, that `import policies` imports no
policy module, and that a lookup imports its own module and no other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import policies
from cosim.errors import UnknownNameError
from cosim.registry import Registry

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "policies"


def _decorated_names() -> dict[str, set[str]]:
    """module key (first part under policies/) → names given to `POLICIES.register(...)` there."""
    found: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "POLICIES"):
                assert node.args and isinstance(node.args[0], ast.Constant), f"{path}: name must be a literal"
                key = path.relative_to(PKG).parts[0].removesuffix(".py")
                found.setdefault(key, set()).add(node.args[0].value)
    return found


def test_builtin_table_matches_the_decorators():
    table = {module: set(names) for module, names in policies.BUILTIN.items()}
    assert table == _decorated_names()


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_import_loads_no_policy_and_a_lookup_loads_only_its_module():
    modules = "sorted(m.split('.')[1] for m in sys.modules if m.count('.') == 1 and m.startswith('policies.') " \
              "and m.split('.')[1] in policies.BUILTIN)"
    out = _fresh("import sys, policies\n"
                 f"print(len(policies.POLICIES.names()), {modules})\n"
                 "policies.make('fifo-backfill')\n"
                 f"print(policies.POLICIES.loaded(), {modules})\n")
    first, second = out.splitlines()
    assert first == f"{sum(map(len, policies.BUILTIN.values()))} []"
    assert second == "['fifo', 'fifo-backfill'] ['fifo']"


def test_load_all_registers_every_declared_name():
    policies.POLICIES.load_all()
    assert policies.POLICIES.loaded() == policies.POLICIES.names()
    assert len(policies.POLICIES) == sum(map(len, policies.BUILTIN.values()))


def test_lazy_registry_unknown_name_lists_declared_ones():
    reg: Registry[type] = Registry("widget")
    reg.lazy("json", "later")
    with pytest.raises(UnknownNameError) as exc:
        reg.get("nope")
    assert "later" in str(exc.value)
    assert "later" in reg and list(reg) == ["later"] and len(reg) == 1 and reg.loaded() == []


def test_lazy_declaration_that_the_module_does_not_keep_is_a_bug():
    reg: Registry[type] = Registry("widget")
    reg.lazy("json", "ghost")  # importing json registers nothing here
    with pytest.raises(LookupError, match="did not register"):
        reg.get("ghost")
