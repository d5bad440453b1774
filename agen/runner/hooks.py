"""What a Runner asks its owner (the Nest's Manager, or nobody) at each checkpoint.

- ``is_held(task_id)``: checked before each model call; True suspends the run (it resumes later).
- ``report_progress(task_id, progress)``: what the built-in report_progress tool reports.
- ``drain_inbox(task_id)``: user notes that arrived while the run worked (steer/collect).
- ``delegation``: the port child tasks are submitted and awaited through (None: no Hub to reach).

A Runner without hooks (the SDK, `agen run`) is never held, has no inbox and tells the agent
nobody watches its progress. Run events go to the run's ``events`` sink, not through hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agen.runner.delegation import DelegationPort


class RunHooks(Protocol):
    """The hooks a Runner calls; an owner implements them all (typed, never looked up by name)."""

    async def is_held(self, task_id: str) -> bool: ...

    async def report_progress(self, task_id: str | None, progress: dict[str, Any]) -> None: ...

    async def drain_inbox(self, task_id: str) -> list[str]: ...

    @property
    def delegation(self) -> DelegationPort | None: ...
