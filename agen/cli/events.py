"""agen triggers, webhook-secret, providers, events and notify: what happened and who hears of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    complete_deployments,
    err,
    group,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.client import Client
    from agen.wire.signals import CreateWebhookSecretResponse

T = TypeVar("T")
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


notify_app = group(help="Where the Hub POSTs a namespace's events.", no_args_is_help=True)


@notify_app.command("set")
def notify_set(
    name: Annotated[str, typer.Argument(help="Target name.", show_default=False)],
    url: Annotated[str, typer.Argument(help="http(s) URL to POST events to.", show_default=False)],
    event: Annotated[
        list[str] | None, typer.Option("--event", help="event type (repeatable)")
    ] = None,
    deployment: Annotated[
        str | None, typer.Option("--deployment", help="only this deployment")
    ] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", help="only events with key=value")
    ] = None,
    severity: Annotated[str | None, typer.Option("--severity", help="at least this severe")] = None,
    secret: Annotated[
        str | None,
        typer.Option("--secret", help="platform secret that signs deliveries (X-Agen-Signature)"),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Create or replace a notification target."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.hub.events.log import parse_labels
    from agen.wire.signals import SetNotifyTargetRequest

    req = make_request(
        SetNotifyTargetRequest,
        namespace=namespace,
        name=name,
        url=url,
        events=event or [],
        deployment=deployment,
        labels=parse_labels(label or []),
        severity=severity,
        secret=secret,
    )
    resp = with_client(hub, token, lambda c: c.call(r.SetNotifyTarget, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(f"{name}: events go to {url}")


@notify_app.command("ls")
def notify_ls(
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Notification targets and their delivery state."""
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.wire.signals import ListNotifyTargetsRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.ListNotifyTargets, make_request(ListNotifyTargetsRequest, namespace=namespace)
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    for t in resp.targets:
        state = (
            f"paused until {when(t.paused_until_ms)}: {t.last_error}" if t.paused_until_ms else "ok"
        )
        filt = ",".join(t.events) or "every event"
        print(f"{t.name:<16} {t.url}  {filt}  delivered {t.delivered} dropped {t.dropped}  {state}")
    if not resp.targets:
        err("no notification targets; add one with `agen notify set <name> <url>`")


@notify_app.command("rm")
def notify_rm(
    name: Annotated[str, typer.Argument(help="Target name.", show_default=False)],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Remove a notification target."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.signals import NotifyTargetRef

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.DeleteNotifyTarget, make_request(NotifyTargetRef, namespace=namespace, name=name)
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(resp.message)


def register(app: typer.Typer) -> None:
    app.command("triggers")(triggers)
    app.command("webhook-secret")(webhook_secret)
    app.command("providers")(providers)
    app.command("events")(events)
    app.add_typer(notify_app, name="notify")
