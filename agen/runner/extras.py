"""Per-run pieces the loop asks for: the task workspace and the memory prompt section.

``RunExtras.begin`` runs before a run's first model call (creates the workspace, names
it in the system prompt); ``RunScope.section`` is called before every model call
(memory blocks read fresh, live URLs fetched); ``RunScope.end`` runs when the run ends
(removes a per_task workspace). None of them ever fails a run. MCP servers whose args
use ``${WORKSPACE}`` are per run: ``RunScope.start_tools`` starts them on the run's own
directory and ``RunScope.close_tools`` stops them when the run ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from agen.bundle import Bundle
from agen.runner.memory import MemoryContext
from agen.runner.redact import Redactor
from agen.runner.sandboxing import EventOrigin
from agen.runner.tools.base import Tool, Toolset
from agen.runner.types import RunRequest
from agen.runner.workspace import TaskWorkspace, prepare_workspace, release_workspace
from agen.store.base import Store

log = logging.getLogger("agen.runner")


@dataclass
class RunScope:
    workspace: TaskWorkspace | None = None
    memory: MemoryContext | None = None
    system_lines: list[str] = field(default_factory=list)
    toolsets: list[Toolset] = field(
        default_factory=list
    )  # this run's own MCP servers (${WORKSPACE})

    @property
    def workspace_path(self) -> str | None:
        return self.workspace.path if self.workspace else None

    async def section(self) -> str:
        """Text appended to the system prompt for this model call ('' when there is none)."""
        if self.memory is None:
            return ""
        try:
            return await self.memory.section()
        except Exception as e:  # optional context must not fail the run
            log.warning("memory section left out of this turn: %s", e)
            return ""

    def end(self) -> None:
        release_workspace(self.workspace)

    async def start_tools(self) -> list[Tool]:
        """Start this run's own toolsets; a server that cannot start fails the run (its tools are missing)."""
        tools: list[Tool] = []
        for ts in self.toolsets:
            tools.extend(await ts.start())
        return tools

    async def close_tools(self) -> None:
        for ts in self.toolsets:
            with contextlib.suppress(Exception):
                await ts.close()


class RunExtras:
    """The tools side's per-run additions for one bundle."""

    def __init__(
        self,
        bundle: Bundle,
        store: Store,
        redactor: Redactor | None = None,
        *,
        run_toolsets: Callable[[str | None, EventOrigin], list[Toolset]] | None = None,
    ) -> None:
        self.bundle = bundle
        self.run_toolsets = run_toolsets  # (workspace path, whose) -> the run's own toolsets
        self.store = store
        self.redactor = redactor or Redactor()
        self._memory = bundle.config.memory

    def tools(self, namespace: str = "default") -> list[Tool]:
        """Tools registered once per Runner (memory_update for non-read attachments)."""
        if not self._memory:
            return []
        return MemoryContext(self.store, namespace, list(self._memory), self.redactor).tools()

    async def begin(self, req: RunRequest, run_id: str) -> RunScope:
        ws = prepare_workspace(
            self.bundle,
            namespace=req.namespace,
            deployment=req.deployment or self.bundle.name,
            run_id=run_id,
            task_id=req.task_id,
            conversation_key=req.conversation_key,
        )
        memory = (
            MemoryContext(self.store, req.namespace, list(self._memory), self.redactor)
            if self._memory
            else None
        )
        origin = EventOrigin(req.namespace, req.deployment or self.bundle.name, req.task_id, run_id)
        toolsets = (
            self.run_toolsets(ws.path if ws else None, origin)
            if self.run_toolsets is not None
            else []
        )
        return RunScope(ws, memory, [ws.prompt_line()] if ws else [], toolsets)
