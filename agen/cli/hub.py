"""``agen hub``: the Hub on its own (``agen hub serve``: Nests run elsewhere), and its keys: ``rotate-kek``
re-seals every stored secret under a new key-encryption key, ``rotate-token-key`` adds a call-token key
(through the Hub's API, so against a remote Hub)."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    TokenOpt,
    err,
    group,
    print_json,
)

hub_app = group(help="The Hub on its own (Nests run elsewhere).", no_args_is_help=True)


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


@hub_app.command("rotate-kek")
def hub_rotate_kek(
    store: Annotated[
        str | None,
        typer.Option("--store", help="Store URL (default: as agen up).", show_default=False),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-seal every stored secret from AGEN_HUB_KEK to AGEN_HUB_KEK_NEW in one transaction.

    The platform secrets and the Hub CA key are opened with the current KEK (AGEN_HUB_KEK or
    AGEN_HUB_KEK_FILE) and sealed under the new one (AGEN_HUB_KEK_NEW or AGEN_HUB_KEK_NEW_FILE). Then
    restart every Hub with the new key as AGEN_HUB_KEK: the old one no longer opens them.
    """
    from agen.cli._hub import run as run_async
    from agen.errors import InvalidError
    from agen.hub.platform_secrets import rotate_kek
    from agen.hub.sealing import ENV_KEK_NEW, ENV_KEK_NEW_FILE, kek_from_env
    from agen.store import open_store

    old = kek_from_env()
    new = kek_from_env(ENV_KEK_NEW, ENV_KEK_NEW_FILE)
    if new is None:
        raise InvalidError(
            f"agen hub rotate-kek: set {ENV_KEK_NEW} (or {ENV_KEK_NEW_FILE}) to the new key-encryption "
            "key (at least 32 random characters, e.g. `openssl rand -base64 48`)",
            field=ENV_KEK_NEW,
        )
    if new == old:
        raise InvalidError(
            f"agen hub rotate-kek: {ENV_KEK_NEW} is the current AGEN_HUB_KEK; choose a new key",
            field=ENV_KEK_NEW,
        )

    async def go() -> int:
        st = await open_store(store)
        try:
            return await st.write(lambda tx: rotate_kek(tx, old, new))
        finally:
            await st.close()

    count = run_async(go())
    if json_out:
        print_json({"resealed": count})
        return
    print(f"re-sealed {count} secret value(s) under {ENV_KEK_NEW}")
    err(
        f"agen hub: restart every Hub with AGEN_HUB_KEK set to the value of {ENV_KEK_NEW}; "
        "the old key no longer opens these values"
    )


@hub_app.command("rotate-token-key")
def hub_rotate_token_key(
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Rotate even though the newest key is younger than 1h10m; tokens signed by the "
            "key this retires are refused at once.",
        ),
    ] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Add a call-token key (admin): published at once, signing after a 5-minute grace.

    The key it replaces keeps verifying live tokens until the next rotation, which retires it;
    so a rotation is refused while the newest key is younger than an agent token's lifetime (1h)
    plus twice the grace, saying when it is allowed.
    """
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.cli._table import print_table
    from agen.wire.tokens import RotateTokenKeyRequest

    req = RotateTokenKeyRequest(force=force)
    resp = with_client(hub, token, lambda c: c.call(r.RotateTokenKey, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(
        ("KEY", "STATE", "CREATED"),
        [(k.id, k.state, when(k.created_ms)) for k in resp.keys],
    )
    err(f"agen hub: {resp.message}")


def register(app: typer.Typer) -> None:
    app.add_typer(hub_app, name="hub")
