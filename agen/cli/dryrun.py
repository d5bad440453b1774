"""``agen run --dry-run``: every admission check (paused, budget, queue_full, rate_limit) for a
task, without queuing it or taking a rate token (DryRunTask; seed 004's dry run)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agen.cli.submit import RunOptions
    from agen.wire.signals import DryRunTaskResponse
    from agen.wire.tasks import SubmitTaskRequest

REFUSED_EXIT = 7
"""Refused by an admission limit (budget, queue_full, rate_limit); a paused deployment exits as its
submission would (unavailable, 3)."""


def dry_run(
    target: str,
    text: str,
    o: RunOptions,
    *,
    hub: str | None,
    token: str | None,
    namespace: str,
    json_out: bool,
) -> int:
    """Ask the Hub (a live one, else the local store) whether the task would be admitted; the exit code."""
    from agen.api import registry as r
    from agen.cli._common import is_folder, print_json
    from agen.cli._hub import run as run_async
    from agen.cli.submit import build_request, hub_is_live
    from agen.local import read_local

    deployment = target
    if is_folder(
        target
    ):  # a bundle folder: ask about the deployment of that name (not deployed here)
        from agen.bundle import load_bundle

        deployment = load_bundle(Path(target)).name
    req = build_request(deployment, text, namespace, o)
    local = read_local(strict=hub is None)
    if hub is not None or (local is not None and hub_is_live(local.url, local.ca_hash)):
        from agen.cli._hub import with_client

        verdict = with_client(hub, token, lambda c: c.call(r.DryRunTask, req))
    else:
        verdict = run_async(_embedded(req))
    if json_out:
        print_json(verdict.model_dump(mode="json"))
    else:
        _print(deployment, verdict)
    if verdict.admitted:
        return 0
    from agen.errors import UnavailableError

    return UnavailableError.exit_code if verdict.stage == "paused" else REFUSED_EXIT


async def _embedded(req: SubmitTaskRequest) -> DryRunTaskResponse:
    """No Hub running: the same RPC in process over the local store (nothing is started or queued)."""
    from agen.api import registry as r
    from agen.client import Client
    from agen.hub.service import Hub
    from agen.store import open_store

    store = await open_store(None)
    try:
        return await Client.in_process(Hub(store)).call(r.DryRunTask, req)
    finally:
        await store.close()


def _print(deployment: str, v: DryRunTaskResponse) -> None:
    from agen.cli._common import err

    if v.admitted:
        print(f"admitted: {deployment} would queue this task now")
    else:
        retry = f" (retry after {v.retry_after_s}s)" if v.retry_after_s is not None else ""
        print(f"refused at stage {v.stage}: {v.reason}{retry}")
    for c in v.checks:
        err(f"  {c.stage}: {'ok' if c.ok else 'refused: ' + c.reason}")
