"""``agen secret set|ls|rm``: platform secrets (bundle secrets with source "platform"),
``agen hub rotate-kek``: re-seal every stored secret under a new key-encryption key, and
``agen hub rotate-token-key``: add a call-token key (through the Hub's API, so against a remote Hub).

A value is read from stdin (a hidden prompt on a terminal), never from argv, and never printed.
"""

from __future__ import annotations

import sys
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

secret_app = group(
    help='Platform secrets: bundle secrets with source "platform" (values never shown).',
    no_args_is_help=True,
)
NameArg = Annotated[
    str, typer.Argument(help="Secret name (as x-agen/secrets.json names it).", show_default=False)
]


def _read_value(name: str) -> str:
    """The value from stdin (one trailing newline dropped), or a hidden prompt on a terminal."""
    from agen.errors import InvalidError
    from agen.wire.secrets import MAX_SECRET_BYTES

    if sys.stdin is None:
        raise InvalidError(f"agen secret set {name} reads the value from stdin, and there is none")
    if sys.stdin.isatty():
        import getpass

        value = getpass.getpass(f"value of {name} (hidden): ")
    else:
        value = sys.stdin.read()
        value = value[:-1] if value.endswith("\n") else value
        value = value[:-1] if value.endswith("\r") else value
    if len(value) > MAX_SECRET_BYTES:
        raise InvalidError(
            f"agen secret set {name}: the value is {len(value)} characters; at most "
            f"{MAX_SECRET_BYTES} are allowed",
            field="stdin",
        )
    if not value:
        raise InvalidError(
            f'agen secret set {name}: the value is empty; pipe it in: printf %s "$VALUE" | '
            f"agen secret set {name} --for DEPLOYMENT",
            field="stdin",
        )
    return value


@secret_app.command("set")
def secret_set(
    name: NameArg,
    grant: Annotated[
        list[str] | None,
        typer.Option(
            "--for",
            "--grant",
            help="Deployment that may read it (repeatable; replaces the grants). Without it the grants stay as they are.",
            show_default=False,
        ),
    ] = None,
    namespace: NamespaceOpt = "default",
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Set a platform secret, value on stdin (admin); sealed under the Hub's AGEN_HUB_KEK."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.secrets import SetSecretRequest

    # name and grants are checked with a stand-in value, so an error message never echoes the secret
    checked = make_request(
        SetSecretRequest,
        {"name": "NAME", "grants": "--for"},
        namespace=namespace,
        name=name,
        value="-",
        grants=grant,
    )
    req = checked.model_copy(update={"value": _read_value(name)})
    resp = with_client(hub, token, lambda c: c.call(r.SetSecret, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    s = resp.secret
    grants = ", ".join(s.grants) or "no deployment (grant one with --for)"
    print(f"secret {s.namespace}/{s.name} set; granted to {grants}")
    if not s.sealed:
        err(
            "agen secret: stored unsealed: the Hub has no AGEN_HUB_KEK (or AGEN_HUB_KEK_FILE); "
            "set one to seal secrets at rest (docs/scale-out.md, Secrets)"
        )


@secret_app.command("ls")
def secret_ls(
    namespace: NamespaceOpt = "default",
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A namespace's platform secrets: names, grants, updated time; never values (admin)."""
    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.secrets import ListSecretsRequest

    req = make_request(ListSecretsRequest, {}, namespace=namespace)
    resp = with_client(hub, token, lambda c: c.call(r.ListSecrets, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(
        ("NAME", "GRANTS", "SEALED", "UPDATED", "BY"),
        [
            (
                s.name,
                ",".join(s.grants) or "-",
                "yes" if s.sealed else "no",
                ago(s.updated_ms),
                s.updated_by or "-",
            )
            for s in resp.secrets
        ],
    )


@secret_app.command("rm")
def secret_rm(
    name: NameArg,
    namespace: NamespaceOpt = "default",
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove a platform secret (admin); running instances keep the value they started with."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.secrets import DeleteSecretRequest

    req = make_request(DeleteSecretRequest, {"name": "NAME"}, namespace=namespace, name=name)
    resp = with_client(hub, token, lambda c: c.call(r.DeleteSecret, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.message)


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
    from agen.cli.nest import hub_app

    app.add_typer(secret_app, name="secret")
    hub_app.command("rotate-kek")(hub_rotate_kek)
    hub_app.command("rotate-token-key")(hub_rotate_token_key)
