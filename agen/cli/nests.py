"""``agen nests``: the Nests a Hub knows (list, revoke)."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    TokenOpt,
    group,
    make_request,
    print_json,
)

nests_app = group(help="The Nests a Hub knows.", no_args_is_help=False)


@nests_app.callback(invoke_without_command=True)
def nests_ls(
    ctx: typer.Context, hub: HubOpt = None, token: TokenOpt = None, json_out: JsonOpt = False
) -> None:
    """Every Nest: labels, capacity, instances, last heartbeat, state."""
    if ctx.invoked_subcommand is not None:
        return
    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.nests import ListNestsRequest

    resp = with_client(hub, token, lambda c: c.call(r.ListNests, ListNestsRequest()))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(
        ("NAME", "ID", "STATE", "CAPACITY", "INSTANCES", "LABELS", "HEARTBEAT"),
        [
            (
                n.name,
                n.id,
                n.state,
                str(n.capacity or "any"),
                str(n.instances),
                ",".join(f"{k}={v}" for k, v in sorted(n.labels.items())) or "-",
                ago(n.last_heartbeat_ms),
            )
            for n in resp.nests
        ],
    )


@nests_app.command("revoke")
def nests_revoke(
    nest: Annotated[str, typer.Argument(help="The Nest's id or name.", show_default=False)],
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """End a Nest's credential, assignments and leases for good (admin)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.nests import RevokeNestRequest

    req = make_request(RevokeNestRequest, {"nest": "NEST"}, nest=nest)
    resp = with_client(hub, token, lambda c: c.call(r.RevokeNest, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.message)


def register(app: typer.Typer) -> None:
    app.add_typer(nests_app, name="nests")
