"""``agen join-token create``: a single-use token that enrols one Nest."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    LabelOpt,
    TokenOpt,
    err,
    group,
    make_request,
    print_json,
)

join_app = group(help="One-time tokens that enrol Nests.", no_args_is_help=True)


@join_app.command("create")
def join_token_create(
    ttl: Annotated[
        str, typer.Option("--ttl", help="How long the token can be used (once).")
    ] = "1h",
    label: LabelOpt = None,
    name: Annotated[
        str | None, typer.Option("--name", help="A note for the token.", show_default=False)
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A single-use token that enrols one Nest (admin)."""
    from agen.api import registry as r
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.wire.nests import CreateJoinTokenRequest

    ttl_ms = parse_duration_ms(ttl, flag="--ttl")
    if ttl_ms <= 0:
        raise InvalidError("--ttl must be more than 0 (a join token always expires)", field="--ttl")
    req = make_request(
        CreateJoinTokenRequest,
        {"labels": "--label"},
        ttl_ms=ttl_ms,
        labels=parse_labels(label or []),
        name=name,
    )
    resp = with_client(hub, token, lambda c: c.call(r.CreateJoinToken, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.token)
    err(
        f"join token {resp.id}: enrols one Nest within {ttl}; use it with `agen nest run --join-token`"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(join_app, name="join-token")
