"""``agen nest run``: a Nest in its own process, enrolled with a Hub (its Gateway beside it)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import (
    LabelOpt,
    err,
    group,
)

if TYPE_CHECKING:
    from agen.nest.remote import GatewayStarter, HubLinkOfNest, NestOptions, RunningGateway

nest_app = group(help="A Nest in its own process, enrolled with a Hub.", no_args_is_help=True)


@nest_app.command("run")
def nest_run(
    hub: Annotated[
        list[str],
        typer.Option(
            "--hub",
            help="The Hub's URL; repeat it for several Hubs on one store (the next one is used "
            "when one does not answer).",
            show_default=False,
        ),
    ],
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="The store the Hub uses (instances write run data there), e.g. sqlite:/path/agen.db "
            "or the host role's postgres://agen_host@… (`agen store host-role`).",
            show_default=False,
        ),
    ] = None,
    join_token: Annotated[
        str | None,
        typer.Option(
            "--join-token",
            envvar="AGEN_JOIN_TOKEN",
            help="One-time join token from `agen join-token create` (first start only).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", help="Nest name (default: this machine's host name).", show_default=False
        ),
    ] = None,
    label: LabelOpt = None,
    capacity: Annotated[
        int, typer.Option("--capacity", help="Maximum instances (0 = unlimited).")
    ] = 8,
    backend: Annotated[
        str, typer.Option("--backend", help="Where instances run: inproc or process.")
    ] = "inproc",
    host_memory_limit: Annotated[
        str,
        typer.Option("--host-memory-limit", help="With --backend process: cap each host's memory."),
    ] = "0",
    ca_hash: Annotated[
        str | None,
        typer.Option(
            "--ca-hash",
            envvar="AGEN_CA_HASH",
            help="Pin the Hub CA (from `agen join-token create`) for an https Hub.",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            help="Where the Nest keeps its credential (default: AGEN_HOME/nests/NAME).",
            show_default=False,
        ),
    ] = None,
    gateway_listen: Annotated[
        str | None,
        typer.Option(
            "--gateway-listen",
            help="This Nest's A2A Gateway listen address (loopback unless AGEN_INSECURE=1): "
            "/a2a/NAMESPACE/DEPLOYMENT; 'off' runs no Gateway. Default: 127.0.0.1:7071 when the "
            "a2a extra is installed, else no Gateway.",
            show_default=False,
        ),
    ] = None,
    gateway_url: Annotated[
        str | None,
        typer.Option(
            "--gateway-url",
            help="How callers reach this Nest's Gateway, e.g. behind a TLS proxy (default: from "
            "--gateway-listen); `agen resolve` lists it.",
            show_default=False,
        ),
    ] = None,
    gateway_auth: Annotated[
        str,
        typer.Option(
            "--gateway-auth",
            help="required: every A2A caller presents a Hub-signed call token or an operator API "
            "token (optional, anonymous callers, is not supported yet).",
        ),
    ] = "required",
    store_for: Annotated[
        list[str] | None,
        typer.Option(
            "--store-for",
            metavar="NAMESPACE=URL",
            help="That namespace's instances write to this store instead, e.g. a host role limited "
            "to it (`agen store host-role --namespace`); repeatable.",
            show_default=False,
        ),
    ] = None,
    store_for_only: Annotated[
        bool,
        typer.Option(
            "--store-for-only",
            help="Run only namespaces that have a --store-for entry (no fallback to --store).",
        ),
    ] = False,
    cert_renew_before: Annotated[
        str | None,
        typer.Option(
            "--cert-renew-before",
            metavar="DURATION",
            help="An https Hub: renew the Nest's client certificate (mTLS) when less than this "
            "remains (default 10d).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run a Nest that pulls work from a Hub; Ctrl-C drains and stops it."""
    import asyncio
    from pathlib import Path

    from agen.cli._common import parse_duration_ms
    from agen.client import check_hub_url
    from agen.crypto.cahash import check_ca_hash
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.nest.backends import check_backend
    from agen.nest.certs import RENEW_BEFORE_MS
    from agen.nest.process import parse_memory_limit
    from agen.nest.remote import NestOptions, run_nest
    from agen.nest.stores import parse_store_for
    from agen.up import gateway_listen_of, parse_listen

    if capacity < 0:
        raise InvalidError(
            f"--capacity {capacity}: must be 0 (unlimited) or more", field="--capacity"
        )
    memory = parse_memory_limit(host_memory_limit)
    check_backend(backend, memory)
    check_gateway_auth(gateway_auth)
    gateway = gateway_listen_of(gateway_listen, "agen nest")
    listen = (
        None if gateway is None else parse_listen(gateway, flag="--gateway-listen", any_port=True)
    )
    if gateway_url is not None:
        if listen is None:
            raise InvalidError(
                "--gateway-url names this Nest's Gateway, but --gateway-listen is off; drop one",
                field="--gateway-url",
            )
        check_hub_url(gateway_url, "--gateway-url")
    mapped = parse_store_for(store_for or [])
    if store_for_only and not mapped:
        raise InvalidError(
            "--store-for-only runs only the namespaces --store-for names: add --store-for NS=URL",
            field="--store-for-only",
        )
    if store_for_only and store is not None:
        raise InvalidError(
            "--store is not used with --store-for-only (every namespace this Nest runs has its own "
            "--store-for): drop one",
            field="--store",
        )
    if store is None and not store_for_only:
        raise InvalidError(
            "--store is required: the store the Hub uses, where instances write run data (or "
            "--store-for NS=URL with --store-for-only)",
            field="--store",
        )
    nest_name = name or socket.gethostname().split(".")[0] or "nest"
    hubs = [check_hub_url(h, "--hub") for h in hub]
    renew_before_ms = RENEW_BEFORE_MS
    if cert_renew_before is not None:
        if not any(h.startswith("https://") for h in hubs):
            raise InvalidError(
                "--cert-renew-before is for the client certificate an https Hub issues; no --hub "
                "is https",
                field="--cert-renew-before",
            )
        renew_before_ms = parse_duration_ms(cert_renew_before, flag="--cert-renew-before")
        if renew_before_ms <= 0:
            raise InvalidError(
                "--cert-renew-before must be more than 0, e.g. 10d", field="--cert-renew-before"
            )
    opts = NestOptions(
        hub=hubs[0],
        more_hubs=tuple(hubs[1:]),
        store=store,
        name=nest_name,
        join_token=join_token or None,
        labels=parse_labels(label or []),
        capacity=capacity,
        backend=backend,
        host_memory_limit=memory,
        data_dir=Path(data_dir).expanduser() if data_dir else None,
        ca_hash=check_ca_hash(ca_hash, "--ca-hash") if ca_hash else None,
        gateway_listen=listen,
        gateway_url=gateway_url,
        cert_renew_before_ms=renew_before_ms,
        store_for=mapped,
        store_for_only=store_for_only,
    )
    if any(h.startswith("https://") for h in hubs) and opts.ca_hash is None:
        err("agen nest: no --ca-hash: the Hub's certificate is checked against the system's CAs")
    asyncio.run(run_nest(opts, _gateway_starter(opts) if listen else None))


def check_gateway_auth(mode: str) -> None:
    """``required`` only: a Nest's Gateway refuses calls without a token (seed 000 §10); anonymous
    callers (``optional``) are for a loopback ``agen up`` alone, and no agen Gateway takes them yet."""
    from agen.errors import InvalidError

    if mode == "required":
        return
    if mode == "optional":
        raise InvalidError(
            "not supported yet: --gateway-auth optional (anonymous A2A callers): a Nest's Gateway "
            "serves only callers with a call token or an operator API token; use required (the "
            "default)",
            field="--gateway-auth",
        )
    raise InvalidError(
        f"--gateway-auth {mode!r}: use required (every A2A caller presents a token)",
        field="--gateway-auth",
    )


def _gateway_starter(opts: NestOptions) -> GatewayStarter:
    """Starts the Gateway on --gateway-listen, reaching the Hub over the Nest's Hubs with each
    caller's own token; a listen address in use leaves the Nest running without one (as agen up)."""

    async def start(link: HubLinkOfNest) -> RunningGateway | None:
        from agen.errors import ConflictError
        from agen.gateway.server import start_gateway

        assert opts.gateway_listen is not None
        host, port = opts.gateway_listen
        try:
            gateway = await start_gateway(
                host,
                port,
                opts.hub,
                ca_hash=opts.ca_hash,
                link=link,
                public_url=opts.gateway_url,
                token_keys=link.token_keys,
                keys_file=link.keys_file,
            )
        except ConflictError as e:
            err(f"agen nest: no A2A Gateway: {e}")
            return None
        err(f"agen nest: A2A Gateway at {gateway.url}/a2a/<namespace>/<deployment>")
        return gateway

    return start


def register(app: typer.Typer) -> None:
    app.add_typer(nest_app, name="nest")
