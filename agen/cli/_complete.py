"""Shell completion of deployment names, task ids and approval ids, read from the Hub.

A completion runs on every Tab press, so it asks the Hub (--hub/--token from the line typed so far,
else the local ``agen up``) with a short deadline and never raises: no Hub, a slow one or a bad
token completes nothing rather than printing an error into the user's prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agen.client import Client

DEADLINE_S = 1.5
LIMIT = 200


def _ask(ctx: Any, fetch: Callable[[Client, str], Awaitable[list[str]]]) -> list[str]:
    import asyncio

    from agen.cli._hub import run as run_async
    from agen.client import Client

    params = getattr(ctx, "params", None) or {}
    namespace = params.get("namespace") or "default"

    async def go() -> list[str]:
        async with Client.from_options(params.get("hub"), params.get("token")) as client:
            return await asyncio.wait_for(fetch(client, namespace), DEADLINE_S)

    try:
        return run_async(go())
    except Exception:  # a completion must never break the prompt: nothing to offer
        return []


def _matching(values: list[str], incomplete: str) -> list[str]:
    return [v for v in dict.fromkeys(values) if v.startswith(incomplete)]


def deployments(ctx: Any, incomplete: str) -> list[str]:
    """Deployment names in the namespace given on the line (default: default)."""

    async def fetch(client: Client, namespace: str) -> list[str]:
        from agen.api import registry as r
        from agen.wire.deployments import ListDeploymentsRequest

        resp = await client.call(r.ListDeployments, ListDeploymentsRequest(namespace=namespace))
        return [d.name for d in resp.deployments]

    return _matching(_ask(ctx, fetch), incomplete)


def tasks(ctx: Any, incomplete: str) -> list[str]:
    """The ids of the most recent tasks."""

    async def fetch(client: Client, namespace: str) -> list[str]:
        from agen.api import registry as r
        from agen.wire.tasks import ListTasksRequest

        resp = await client.call(r.ListTasks, ListTasksRequest(namespace=namespace, limit=LIMIT))
        return [t.id for t in resp.tasks]

    return _matching(_ask(ctx, fetch), incomplete)


def approvals(ctx: Any, incomplete: str) -> list[str]:
    """The ids of pending approvals."""

    async def fetch(client: Client, namespace: str) -> list[str]:
        from agen.api import registry as r
        from agen.wire.approvals import ListApprovalsRequest

        resp = await client.call(r.ListApprovals, ListApprovalsRequest(namespace=namespace))
        return [a.id for a in resp.approvals]

    return _matching(_ask(ctx, fetch), incomplete)
