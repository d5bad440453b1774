"""Task workspaces (seed 000 §7, 2.45): a directory per task, per conversation or per deployment.

Created under AGEN_WORKSPACE_ROOT (default <tmp>/agen-workspaces)/<namespace>/<deployment>
before the run's first model call, announced in the system prompt, passed to tool servers
in ``_meta`` agen/workspace. Creating and removing it is best-effort: a failure is logged
and the run goes on without it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agen.bundle import Bundle
from agen.bundle.checks import workspace_builtins
from agen.runner.tools.mcp_conn import uses_workspace

log = logging.getLogger("agen.workspace")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def workspace_root() -> Path:
    env = os.environ.get("AGEN_WORKSPACE_ROOT")
    return Path(env) if env else Path(tempfile.gettempdir()) / "agen-workspaces"


def _part(text: str) -> str:
    """A path component for an arbitrary key: readable when safe, hashed suffix when not."""
    clean = _SAFE.sub("_", text)[:80] or "_"
    if clean != text:
        clean += "-" + hashlib.sha256(text.encode()).hexdigest()[:12]
    return clean


@dataclass(frozen=True)
class TaskWorkspace:
    path: str
    mode: str
    remove_at_end: bool

    def prompt_line(self) -> str:
        """What the system prompt says about it."""
        kept = "removed when this task ends" if self.remove_at_end else "kept after this task ends"
        return (
            f"Your workspace directory is {self.path} ({self.mode.replace('_', '-')}, {kept}). "
            "Create and edit files there; tool servers that work on files use it."
        )


def wants_workspace(bundle: Bundle) -> bool:
    """A bundle has a workspace when config.json sets one, an MCP server's args use ${WORKSPACE},
    or it has the built-in workspace tools (on unless a workspace server is configured)."""
    cfg = bundle.config
    return (
        "workspace" in cfg.model_fields_set
        or any(uses_workspace(s) for s in bundle.mcp.mcp_servers.values())
        or bool(workspace_builtins(cfg, bundle.mcp))
    )


def workspace_path(
    mode: str,
    *,
    namespace: str,
    deployment: str,
    run_id: str,
    task_id: str | None,
    conversation_key: str | None,
    root: Path | None = None,
) -> Path:
    base = (root or workspace_root()) / _part(namespace) / _part(deployment or "default")
    if mode == "shared":
        return base / "shared"
    if mode == "per_conversation":
        return base / "conversations" / _part(conversation_key or run_id)
    return base / "tasks" / _part(task_id or run_id)


def prepare_workspace(
    bundle: Bundle,
    *,
    namespace: str,
    deployment: str,
    run_id: str,
    task_id: str | None = None,
    conversation_key: str | None = None,
) -> TaskWorkspace | None:
    """Create the run's workspace directory (None when the bundle has none or it cannot be made)."""
    if not wants_workspace(bundle):
        return None
    ws = bundle.config.workspace
    path = workspace_path(
        ws.mode,
        namespace=namespace,
        deployment=deployment or bundle.name,
        run_id=run_id,
        task_id=task_id,
        conversation_key=conversation_key,
    )
    # Only the built-in tools use it: they make the folder on their first call (most runs never do).
    only_builtins = "workspace" not in bundle.config.model_fields_set and not any(
        uses_workspace(s) for s in bundle.mcp.mcp_servers.values()
    )
    if not only_builtins:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            log.warning(
                "could not create the task workspace %s: %s; the run goes on without one", path, e
            )
            return None
    return TaskWorkspace(str(path), ws.mode, remove_at_end=ws.mode == "per_task" and not ws.retain)


def release_workspace(ws: TaskWorkspace | None) -> None:
    """Remove a per_task workspace at the end of its run (unless retained); never raises."""
    if ws is None or not ws.remove_at_end or not os.path.isdir(ws.path):
        return
    try:
        shutil.rmtree(ws.path)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("could not remove the task workspace %s: %s", ws.path, e)
