"""Optional callbacks the Manager (or the SDK) gives a Runner; every method may be absent.

- ``is_held(task_id)``: checked before each model call; True suspends the run (it resumes later).
- ``report_progress(task_id, progress)``: what the built-in report_progress tool reports.
- ``drain_inbox(task_id)``: user notes that arrived while the run worked (steer/collect).
- ``on_event(run_id, event)``: run events, in order (the SDK's stream).
"""

from __future__ import annotations

from typing import Any, Protocol


class RunHooks(Protocol):
    """The full set of hooks; an object given to a Runner may implement any subset (looked up by name)."""

    async def is_held(self, task_id: str) -> bool: ...

    async def report_progress(self, task_id: str | None, progress: dict[str, Any]) -> None: ...

    async def drain_inbox(self, task_id: str) -> list[str]: ...

    async def on_event(self, run_id: str, event: dict[str, Any]) -> None: ...


async def is_held(hooks: Any, task_id: str | None) -> bool:
    fn = getattr(hooks, "is_held", None)
    if fn is None or task_id is None:
        return False
    return bool(await fn(task_id))


async def drain_inbox(hooks: Any, task_id: str | None) -> list[str]:
    fn = getattr(hooks, "drain_inbox", None)
    if fn is None or task_id is None:
        return []
    return [str(n) for n in await fn(task_id)]


def progress_hook(hooks: Any) -> Any:
    return getattr(hooks, "report_progress", None)


async def emit(hooks: Any, run_id: str, event: dict[str, Any]) -> None:
    fn = getattr(hooks, "on_event", None)
    if fn is not None:
        await fn(run_id, event)
