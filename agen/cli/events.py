"""``agen events``: the event log (tasks, approvals, budgets, holds, triggers, warnings), followed or not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    complete_deployments,
    make_request,
)

if TYPE_CHECKING:
    from agen.client import Client


def events(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only this deployment.",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ] = None,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="keep printing new events")
    ] = False,
    types: Annotated[
        list[str] | None,
        typer.Option(
            "--type", help='only this type (repeatable; "task." matches every task event)'
        ),
    ] = None,
    labels: Annotated[
        list[str] | None, typer.Option("--label", help="only events with key=value")
    ] = None,
    severity: Annotated[
        str | None,
        typer.Option(
            "--severity", help="only events at least this severe: info, warning or critical"
        ),
    ] = None,
    after: Annotated[int | None, typer.Option("--after", help="only events after this seq")] = None,
    limit: Annotated[int, typer.Option("--limit", help="events")] = 50,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """The event log: tasks, approvals, budgets, holds, triggers, warnings (--json: one JSON object a line)."""
    from agen.cli._hub import with_client
    from agen.hub.events.log import parse_labels

    label_map = parse_labels(labels or [])

    async def go(c: Client) -> None:
        from agen.api import registry as r
        from agen.wire.signals import ListEventsRequest

        base = dict(
            namespace=namespace,
            deployment=name,
            types=types or [],
            labels=label_map,
            severity=severity,
            limit=limit,
        )
        req = make_request(
            ListEventsRequest, after=after or 0, last=None if after is not None else limit, **base
        )
        while True:
            page = await c.call(r.ListEvents, req)
            for e in page.events:
                if json_out:  # JSON Lines: one event a line, as `jq -c` and a log shipper read them
                    print(e.model_dump_json(), flush=True)
                else:
                    print(format_event(e), flush=True)
            if not follow:
                return
            req = make_request(ListEventsRequest, after=page.cursor, wait_seconds=30, **base)

    with_client(hub, token, go)


def format_event(e: object) -> str:
    from agen.cli._hub import when
    from agen.wire.signals import Event

    assert isinstance(e, Event)
    where = " ".join(x for x in (e.deployment, e.task_id) if x)
    data = " ".join(
        f"{k}={v}" for k, v in e.data.items() if v is not None and not isinstance(v, dict | list)
    )
    return f"{e.seq:>6} {when(e.created_ms)} {e.severity:<8} {e.type:<22} {where} {data}".rstrip()


def register(app: typer.Typer) -> None:
    app.command("events")(events)
