"""A tool call's arguments in full: pretty JSON, and any shell command among them as shell, both wrapped.

What an approver reads before saying yes: nothing is cut (a trailing ``&& rm -rf …`` must be visible),
long lines wrap instead of running off the pane, and highlighting tells strings from keys.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

SHELL_KEYS = ("command", "cmd", "script", "shell", "bash", "sh")
"""Argument names whose string value is a shell command (workspace.run's ``command`` and the like)."""
THEME = "ansi_dark"
"""Terminal colours, so the highlighting follows the terminal's palette (and the SVG snapshots stay stable)."""


def shell_commands(arguments: Any) -> list[tuple[str, str]]:
    """(name, command) for each top-level argument that holds a shell command."""
    if not isinstance(arguments, dict):
        return []
    return [
        (k, v) for k, v in arguments.items() if k.lower() in SHELL_KEYS and isinstance(v, str) and v
    ]


def arguments_renderable(tool: str, arguments: Any) -> RenderableType:
    """The tool's name, every argument as indented JSON, then each shell command highlighted as shell."""
    # imported here: rich.syntax loads pygments (~20 ms), which the TUI's start does not need
    from rich.syntax import Syntax

    parts: list[RenderableType] = [Text.assemble(("tool ", "dim"), (tool, "bold"))]
    dumped = json.dumps(arguments, ensure_ascii=False, indent=2, sort_keys=True)
    parts.append(Syntax(dumped, "json", theme=THEME, word_wrap=True, background_color="default"))
    for name, command in shell_commands(arguments):
        parts.append(Text(f"{name} (shell):", style="dim"))
        parts.append(
            Syntax(command, "bash", theme=THEME, word_wrap=True, background_color="default")
        )
    return Group(*parts)
