"""Where a Nest's instances run: ``inproc`` (asyncio workers in the Nest's process) or ``process`` (one
``agen host serve`` child per instance, tied to the Nest's life, optionally memory-capped)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agen.errors import InvalidError
from agen.nest.executor import ExecutorFactory, ProgressSink
from agen.store import Store

if TYPE_CHECKING:
    from agen.runner.delegation import DelegationPort

BACKENDS = ("inproc", "process")


def backend_factory(
    store: Store,
    backend: str,
    host_memory_limit: int = 0,
    *,
    progress: ProgressSink | None = None,
    delegation: DelegationPort | None = None,
) -> ExecutorFactory:
    """``inproc``: instances are asyncio workers here; ``process``: one ``agen host serve`` child each.
    ``progress`` receives the report_progress tool's values (the Nest's HubPort); ``delegation`` is
    what runs delegate through (inproc only: a ``process`` host does not delegate yet)."""
    check_backend(backend, host_memory_limit)
    if backend == "inproc":
        from agen.nest.runner_executor import runner_factory

        return runner_factory(store, progress=progress, delegation=delegation)
    from agen.nest.process import process_factory

    return process_factory(store.connect_url, memory_limit=host_memory_limit, progress=progress)


def check_backend(backend: str, host_memory_limit: int = 0) -> None:
    if backend not in BACKENDS:
        raise InvalidError(f"--backend {backend!r}: use inproc or process", field="--backend")
    if host_memory_limit and backend != "process":
        raise InvalidError(
            "--host-memory-limit needs --backend process (an inproc instance shares this "
            "process's memory)",
            field="--host-memory-limit",
        )
