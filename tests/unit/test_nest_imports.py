"""The Nest talks to the Hub only through the API (DESIGN.md §1): nothing in agen/nest imports agen.hub,
at module level or inside a function, so a Nest on another machine needs no Hub code at all."""

from __future__ import annotations

import ast
from pathlib import Path

import agen.nest

NEST = Path(agen.nest.__file__).parent


def imported_modules(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def test_no_nest_module_imports_the_hub() -> None:
    files = sorted(NEST.rglob("*.py"))
    assert len(files) > 5
    offenders = {
        str(f.relative_to(NEST.parent.parent)): sorted(
            m for m in imported_modules(f) if m == "agen.hub" or m.startswith("agen.hub.")
        )
        for f in files
    }
    assert {f: mods for f, mods in offenders.items() if mods} == {}
