"""Fail where code outside agen/store/ reads a Store row as a mapping (run by scripts/lint).

Rows are read one way (agen.store.records): ``tx.row(Type, sql)`` / ``tx.rows(Type, sql)`` (and the
Store's ``row``/``rows``), so fields are names mypy checks, never ``row["col"]``. The raw ``one``/``all``
stay in the Store port for the Store itself and for tests that inspect the database. Outside
agen/store/, a raw read is allowed only where one statement returns two row types: its result may be
tested (``if not found``, ``found is None``) and handed to ``read``/``read_all``, nothing else.

    python -m scripts.row_reads [paths…]   # default: agen
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

RAW = ("one", "all")
READERS = ("read", "read_all")


def _is_raw(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in RAW
        and bool(node.args)  # `stores.all()` and the like take no SQL
    )


def _is_reader_call(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name in READERS


def _allowed_use(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    if _is_reader_call(parent):
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.Compare) and all(
        isinstance(op, ast.Is | ast.IsNot) for op in parent.ops
    ):
        return True
    return isinstance(parent, ast.If | ast.While | ast.IfExp) and parent.test is node


def violations(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        held: set[str] = set()
        for node in ast.walk(fn):
            if not _is_raw(node):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Await):
                node, parent = parent, parents.get(parent)
            if _is_reader_call(parent):
                continue
            if (
                isinstance(parent, ast.Assign)
                and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name)
            ):
                held.add(parent.targets[0].id)
                continue
            yield f"{path}:{node.lineno}: a Store row read as a mapping; use tx.row/rows(Type, sql)"
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in held
                and not _allowed_use(node, parents)
            ):
                yield (
                    f"{path}:{node.lineno}: {node.id} (a raw one/all result) is used other than "
                    "by read()/read_all(); use tx.row/rows(Type, sql)"
                )


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("agen")]
    found = [
        v
        for root in roots
        for path in sorted(root.rglob("*.py") if root.is_dir() else [root])
        if "store" not in path.relative_to(root).parts[:1]
        for v in violations(path)
    ]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
