"""Running apart: ``agen hub serve`` (the Hub alone), ``agen nest run`` (a Nest in its own process),
``agen join-token create`` (enrol one Nest), ``agen nests`` (list, revoke) and ``agen store host-role``
(the database role Nests get)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import HubOpt, JsonOpt, TokenOpt, err, group, make_request, print_json

if TYPE_CHECKING:
    from agen.nest.remote import GatewayStarter, HubLinkOfNest, NestOptions, RunningGateway

hub_app = group(help="The Hub on its own (Nests run elsewhere).", no_args_is_help=True)
nest_app = group(help="A Nest in its own process, enrolled with a Hub.", no_args_is_help=True)
join_app = group(help="One-time tokens that enrol Nests.", no_args_is_help=True)
nests_app = group(help="The Nests a Hub knows.", no_args_is_help=False)
store_app = group(help="The Store's database roles.", no_args_is_help=True)

LabelOpt = Annotated[
    list[str] | None,
    typer.Option("--label", help="Label key=value (repeatable).", show_default=False),
]


@hub_app.command("serve")
def hub_serve(
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            help="Listen address (loopback unless AGEN_INSECURE=1; port 0: any free port, printed).",
        ),
    ] = "127.0.0.1:7070",
    store: Annotated[
        str | None,
        typer.Option("--store", help="Store URL (default: as agen up).", show_default=False),
    ] = None,
    retention: Annotated[
        str,
        typer.Option(
            "--retention", help="Delete spans, log lines and trigger events older than this."
        ),
    ] = "720h",
    tls: Annotated[
        bool,
        typer.Option(
            "--tls", help="Serve HTTPS with the Hub CA (kept in the store); prints its hash."
        ),
    ] = False,
    tls_host: Annotated[
        list[str] | None,
        typer.Option(
            "--tls-host",
            help="Extra host name or IP for the Hub certificate (repeatable).",
            show_default=False,
        ),
    ] = None,
    nest_cert_lifetime: Annotated[
        str | None,
        typer.Option(
            "--nest-cert-lifetime",
            metavar="DURATION",
            help="With --tls: how long Nest client certificates are valid (default 30d; Nests renew "
            "before expiry, see agen nest run --cert-renew-before).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The Hub alone: API, scheduler, triggers; Nests enrol with `agen nest run`."""
    import asyncio

    from agen.cli._common import parse_duration_ms
    from agen.errors import InvalidError
    from agen.hub.tls import (
        MAX_NEST_CERT_LIFETIME_MS,
        MIN_NEST_CERT_LIFETIME_MS,
        NEST_CERT_LIFETIME_MS,
    )
    from agen.up import UpOptions, parse_listen, serve

    parse_listen(listen, tls=tls, any_port=True)
    if tls_host and not tls:
        raise InvalidError(
            "--tls-host names hosts for the TLS certificate: add --tls", field="--tls-host"
        )
    lifetime_ms = NEST_CERT_LIFETIME_MS
    if nest_cert_lifetime is not None:
        if not tls:
            raise InvalidError(
                "--nest-cert-lifetime is for the Nest certificates a TLS Hub issues: add --tls",
                field="--nest-cert-lifetime",
            )
        lifetime_ms = parse_duration_ms(nest_cert_lifetime, flag="--nest-cert-lifetime")
        if not MIN_NEST_CERT_LIFETIME_MS <= lifetime_ms <= MAX_NEST_CERT_LIFETIME_MS:
            raise InvalidError(
                f"--nest-cert-lifetime {nest_cert_lifetime}: use 1h to 365d (default 30d)",
                field="--nest-cert-lifetime",
            )
    opts = UpOptions(
        listen=listen,
        store=store,
        retention_ms=parse_duration_ms(retention, flag="--retention"),
        nest=False,
        tls=tls,
        tls_hosts=tuple(tls_host or ()),
        nest_cert_lifetime_ms=lifetime_ms,
    )
    asyncio.run(serve(opts))


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


@store_app.command("host-role")
def store_host_role(
    store: Annotated[
        str,
        typer.Option(
            "--store",
            help="The Postgres store, as a role that owns its tables (the Hub's) or a superuser: "
            "postgres://ADMIN@host/db.",
            show_default=False,
        ),
    ],
    role: Annotated[
        str, typer.Option("--role", help="The role to create or update.")
    ] = "agen_host",
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace",
            help="Limit the role to this namespace's rows, for reads and writes (repeatable; "
            "row-level security). Without it: every namespace.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """The least-privilege Postgres role for Nests: the run-data tables only (password from
    AGEN_HOST_DB_PASSWORD); give Nests its URL as --store."""
    import os

    from agen.errors import InvalidError
    from agen.store.host_role import PASSWORD_ENV, make_host_role
    from agen.store.locate import is_postgres_url

    if not is_postgres_url(store):
        raise InvalidError(
            "--store: a host role is a Postgres role; give the postgres://… URL of the store "
            "(a SQLite store has no roles: its Nests share the file)",
            field="--store",
        )
    made = make_host_role(
        store, role, list(dict.fromkeys(namespace or [])), os.environ.get(PASSWORD_ENV) or None
    )
    if json_out:
        print_json(
            {
                "role": made.role,
                "created": made.created,
                "namespaces": list(made.namespaces),
                "url": made.url,
            }
        )
        return
    scope = ", ".join(made.namespaces) if made.namespaces else "every namespace"
    print(made.url)
    err(
        f"host role {made.role} {'created' if made.created else 'updated'} ({scope}): give Nests "
        f"--store {made.url} with the password from {PASSWORD_ENV} in the URL"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(hub_app, name="hub")
    app.add_typer(nest_app, name="nest")
    app.add_typer(join_app, name="join-token")
    app.add_typer(nests_app, name="nests")
    app.add_typer(store_app, name="store")
