"""No flag is accepted and ignored (DESIGN.md §8): every parameter of every command in agen/cli (a
function with a typer option or argument) is read by its body. An eager option handled by its own
callback (``--version``) says so with a leading underscore."""

from __future__ import annotations

import ast
from pathlib import Path

import agen.cli

CLI = Path(agen.cli.__file__).parent


def _is_cli_parameter(arg: ast.arg) -> bool:
    """Annotated with a typer option or argument, or with one of agen.cli._common's (``HubOpt``…)."""
    text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    return "typer.Option" in text or "typer.Argument" in text or text.endswith("Opt")


def _unread(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if not any(_is_cli_parameter(a) for a in params):
            continue
        read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for a in params:
            if a.arg not in read and a.arg not in ("self", "cls") and not a.arg.startswith("_"):
                out.append(f"{node.name}({a.arg})")
    return out


def test_every_cli_parameter_is_read() -> None:
    unread = {
        path.name: found
        for path in sorted(CLI.glob("*.py"))
        if (found := _unread(path.read_text(encoding="utf-8")))
    }
    assert unread == {}


def test_the_check_finds_a_flag_nobody_reads() -> None:
    source = "def cmd(run: str, namespace: NamespaceOpt = 'default') -> None:\n    print(run)\n"
    assert _unread(source) == ["cmd(namespace)"]
