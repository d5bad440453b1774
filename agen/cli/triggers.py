"""``agen triggers`` (a deployment's trigger events) and ``agen webhook-secret`` (a webhook trigger's secret)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    complete_deployments,
    err,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.client import Client
    from agen.wire.signals import CreateWebhookSecretResponse

NameArg = Annotated[
    str,
    typer.Argument(
        help="Deployment name.", show_default=False, autocompletion=complete_deployments
    ),
]


def triggers(
    name: NameArg,
    limit: Annotated[int, typer.Option("--limit", help="events")] = 50,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Trigger events (fired, missed, skipped, rejected) of a deployment."""
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.wire.signals import ListTriggerEventsRequest

    req = make_request(ListTriggerEventsRequest, namespace=namespace, deployment=name, limit=limit)
    resp = with_client(hub, token, lambda c: c.call(r.ListTriggerEvents, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    for t in resp.triggers:
        print(f"{t.name:<20} {t.type:<8} next {when(t.next_due_at)}  last {when(t.last_due_at)}")
    if resp.triggers and resp.events:
        print()
    for e in resp.events:
        due = when(e.due_ms) if e.due_ms else when(e.created_ms)
        print(
            f"{due}  {e.trigger_name:<20} {e.status:<8} {e.task_id or '-':<26} {e.reason or ''}".rstrip()
        )
    if not resp.events:
        err(f"no trigger events for {name} yet")


def webhook_secret(
    name: NameArg,
    trigger: Annotated[str, typer.Argument(help="Webhook trigger name.", show_default=False)],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Create (or rotate) a webhook trigger's secret; it is shown once."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.signals import CreateWebhookSecretRequest

    req = make_request(
        CreateWebhookSecretRequest, namespace=namespace, deployment=name, trigger=trigger
    )

    async def go(c: Client) -> tuple[CreateWebhookSecretResponse, str | None]:
        return await c.call(r.CreateWebhookSecret, req), c.url

    resp, url = with_client(hub, token, go)
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.secret)
    err(
        f"POST {(url or '').rstrip('/')}{resp.url_path} with Authorization: Bearer <secret>; "
        "older secrets of this trigger stop working now"
    )


def register(app: typer.Typer) -> None:
    app.command("triggers")(triggers)
    app.command("webhook-secret")(webhook_secret)
