"""Fail on an import of another distribution's private module in agen/ (run by scripts/lint).

A name with a leading underscore after the top-level package (``textual._files``,
``mcp.shared._httpx_utils``, ``from textual.widgets._data_table import …``) is outside that library's
public API: any minor release may move or change it. agen's own private modules are its business.
``__future__`` and other dunder names are not private.

    python -m scripts.private_imports [paths…]   # default: agen
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

OWN = "agen"


def private_part(module: str) -> str | None:
    """The first private component of a dotted module name of another distribution, else None."""
    parts = module.split(".")
    if parts[0] == OWN:
        return None
    for part in parts[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def violations(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        names: list[str] = []
        lineno = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            # `from pkg import _mod` names a private module (or a private attribute) of pkg
        for name in names:
            part = private_part(name)
            if part is not None:
                yield (
                    f"{path}:{lineno}: imports {name!r}, private to another distribution "
                    f"({part!r}); use the library's public API"
                )
                break


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path(OWN)]
    files = [f for root in roots for f in sorted(root.rglob("*.py"))]
    found = [v for f in files for v in violations(f)]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
