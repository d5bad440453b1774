"""Help text conventions for every command: named placeholders and an Examples section, as gh has.

typer renders a value's placeholder from its Python type (``--hub <str>``) and a required argument
as ``{name}``; a reader wants what to type (``--hub URL``, ``NAME``). ``AgenGroup`` (agen/cli/__init__.py),
the root group's class, calls ``polish``: when typer builds the command tree it names every placeholder and adds each
command's examples (agen/cli/_examples.py), so ``agen … --help``, the generated docs
(scripts/gen-docs) and tests all see the same help. Every command is an ``AgenCommand``
(agen/cli/_common.py, the class ``Group.command`` gives typer), which shows an argument by its
placeholder alone.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup

# A value's placeholder by the parameter's name; any other is its flag in capitals (--model MODEL).
PLACEHOLDERS = {
    "hub": "URL",
    "token": "TOKEN",
    "namespace": "NAME",
    "at": "TIME",
    "in_": "DURATION",
    "timeout": "DURATION",
    "expires_in": "DURATION",
    "since": "DURATION",
    "retention": "DURATION",
    "wait": "DURATION",
    "label": "KEY=VALUE",
    "labels": "KEY=VALUE",
    "listen": "HOST:PORT",
    "gateway_listen": "HOST:PORT",
    "store": "URL",
    "name": "NAME",
    "idempotency_key": "KEY",
    "schedule_key": "KEY",
    "conversation": "KEY",
}
ARGUMENTS = {
    "task_id": "TASK",
    "approval_id": "APPROVAL",
    "block_id": "BLOCK",
    "artifact_id": "ARTIFACT",
    "directory": "DIR",
    "bundle_dir": "BUNDLE_DIR",
}


def _placeholder(param: Any) -> str:
    if param.name in PLACEHOLDERS and param.param_type_name == "option":
        return PLACEHOLDERS[str(param.name)]
    if param.param_type_name == "argument":
        return ARGUMENTS.get(param.name, str(param.name).upper().rstrip("_"))
    if param.bare_type() in ("int", "float"):
        return "N"
    longest = str(max(param.opts, key=len)).lstrip("-")
    return longest.upper().replace("-", "_")


def epilog(lines: list[str]) -> str:
    """The Examples section as click prints it: ``\\b`` keeps each example on its own line."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def polish(cmd: Any, path: tuple[str, ...] = ()) -> None:
    """Name every placeholder of ``cmd`` and its subcommands and add their examples."""
    from agen.cli._examples import EXAMPLES

    for param in cmd.params:
        if param.param_type_name == "argument" and isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = _placeholder(param)
        elif param.param_type_name == "option" and not param.is_flag and param.metavar is None:
            param.metavar = _placeholder(param)
    if isinstance(cmd, TyperCommand | TyperGroup) and path in EXAMPLES and not cmd.epilog:
        cmd.epilog = epilog(EXAMPLES[path])
    for name, sub in getattr(cmd, "commands", {}).items():
        polish(sub, (*path, name))
