"""``agen providers``: provider accounts held after an account error, and ending a hold (works without
`agen up`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    err,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.client import Client

T = TypeVar("T")


def _hub_or_store(hub: str | None, token: str | None, fn: Callable[[Client], Awaitable[T]]) -> T:
    """The live Hub (--hub, or a running `agen up`); with none, the same RPC in process over the local
    store, as `agen run` does: a hold must be endable while nothing is running."""
    from agen.cli._hub import run as run_async
    from agen.cli._hub import with_client
    from agen.cli.submit import hub_is_live
    from agen.local import read_local

    local = read_local(strict=hub is None)
    if hub is not None or (local is not None and hub_is_live(local.url, local.ca_hash)):
        return with_client(hub, token, fn)

    async def offline() -> T:
        from agen.client import Client
        from agen.hub.service import Hub
        from agen.store import open_store

        store = await open_store(None)
        try:
            return await fn(Client.in_process(Hub(store)))
        finally:
            await store.close()

    return run_async(offline())


def providers(
    action: Annotated[
        str | None, typer.Argument(help='"resume" to end a hold.', show_default=False)
    ] = None,
    account: Annotated[
        str | None, typer.Argument(help="Account to resume.", show_default=False)
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Provider accounts held after an account error; `agen providers resume ACCT` ends a hold.

    Works without `agen up`: it then reads and changes the local store directly."""
    from agen.api import registry as r
    from agen.cli._hub import when
    from agen.errors import InvalidError
    from agen.wire.signals import ListProviderHoldsRequest, ResumeProviderRequest

    if action is not None:
        if action != "resume" or not account:
            raise InvalidError("usage: agen providers [resume ACCOUNT]")
        resp = _hub_or_store(
            hub,
            token,
            lambda c: c.call(
                r.ResumeProvider, make_request(ResumeProviderRequest, account=account)
            ),
        )
        if json_out:
            print_json(resp.model_dump(mode="json"))
        else:
            print(f"{account}: resumed")
        return
    holds = _hub_or_store(
        hub,
        token,
        lambda c: c.call(
            r.ListProviderHolds, make_request(ListProviderHoldsRequest, namespace=namespace)
        ),
    )
    if json_out:
        print_json(holds.model_dump(mode="json"))
        return
    if not holds.holds:
        err("no provider account is held")
    for h in holds.holds:
        probe = f" probe {h.probe_task_id}" if h.probe_task_id else ""
        print(
            f"{h.account}  held since {when(h.held_since_ms)}  retry {when(h.retry_at_ms)}{probe}  {h.reason}"
        )


def register(app: typer.Typer) -> None:
    app.command("providers")(providers)
