"""``agen notify set|ls|rm``: where the Hub POSTs a namespace's events."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    err,
    group,
    make_request,
    print_json,
)

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
    app.add_typer(notify_app, name="notify")
