"""``agen secret set|ls|rm``: platform secrets (bundle secrets with source "platform"); the key they are
sealed under is rotated by ``agen hub rotate-kek`` (agen.cli.hub).

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


def register(app: typer.Typer) -> None:
    app.add_typer(secret_app, name="secret")
