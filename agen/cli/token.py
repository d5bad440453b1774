"""Identity commands: ``agen token create``, ``agen token ls``, ``agen token revoke`` and ``agen whoami``."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import HubOpt, JsonOpt, TokenOpt, err, group, make_request, print_json

token_app = group(help="API tokens.", no_args_is_help=True)


@token_app.command("create")
def create(
    scope: Annotated[
        list[str],
        typer.Option(
            "--scope",
            help="Scope: viewer, operator, approver or admin (repeatable). A Nest's credential comes from `agen join-token create`.",
            show_default=False,
        ),
    ],
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", help="Limit to namespace (repeatable).", show_default=False),
    ] = None,
    ttl: Annotated[str, typer.Option("--ttl", help="Validity (0 = no expiry).")] = "0",
    name: Annotated[
        str | None, typer.Option("--name", help="Token name.", show_default=False)
    ] = None,
    trust: Annotated[
        str,
        typer.Option(
            "--trust",
            help="Trust tasks submitted with this token get: operator, trusted or untrusted.",
        ),
    ] = "trusted",
    on_behalf: Annotated[
        bool,
        typer.Option(
            "--on-behalf",
            help="For an agent that works for people: each call names a running task (X-Agen-Task) "
            "and is made as that task's submitter, with the scopes both hold.",
        ),
    ] = False,
    deployment: Annotated[
        str | None,
        typer.Option(
            "--deployment",
            help="With --on-behalf (required there): the agent's deployment, [NAMESPACE/]NAME; the "
            "token names only its running tasks.",
            show_default=False,
        ),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an API token; its secret is printed once and only its hash is kept."""
    from pydantic import ValidationError

    from agen.api import registry as r
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.errors import InvalidError
    from agen.wire.tokens import CreateTokenRequest

    ttl_ms = parse_duration_ms(ttl, flag="--ttl")
    try:
        req = CreateTokenRequest(
            scopes=scope,
            namespaces=namespace or [],
            name=name,
            ttl_ms=ttl_ms or None,
            trust=trust,
            on_behalf=on_behalf,
            deployment=deployment,
        )
    except ValidationError as e:
        if any(problem["loc"][:1] == ("deployment",) for problem in e.errors()):
            raise InvalidError(
                f"--deployment {deployment!r}: must be [NAMESPACE/]NAME, each lowercase letters, "
                "digits and dashes (a deployment as `agen ps` shows it)",
                field="--deployment",
            ) from None
        raise InvalidError(
            f"token create: {e}".splitlines()[0]
            + f"; scopes are viewer, operator, approver, admin; "
            f"trust is operator, trusted or untrusted (got --scope {' '.join(scope)}, --trust {trust})"
        ) from None
    resp = with_client(hub, token, lambda c: c.call(r.CreateToken, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.token)
    err(
        f"token {resp.info.id} ({', '.join(resp.info.scopes)}"
        + (f"; namespaces {', '.join(resp.info.namespaces)}" if resp.info.namespaces else "")
        + "): store it now, it is not shown again"
    )


@token_app.command("ls")
def token_ls(
    all_: Annotated[
        bool, typer.Option("--all", help="Revoked tokens too.", show_default=False)
    ] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """API tokens: id, name, scopes, namespaces, expiry; never their secrets (admin)."""
    from agen.api import registry as r
    from agen.cli._hub import ago, when, with_client
    from agen.cli._table import print_table
    from agen.wire.tokens import ListTokensRequest

    req = ListTokensRequest(include_revoked=all_)
    resp = with_client(hub, token, lambda c: c.call(r.ListTokens, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(
        ("ID", "NAME", "SCOPES", "NAMESPACES", "ON BEHALF OF", "CREATED", "EXPIRES", "REVOKED"),
        [
            (
                t.id,
                t.name or ("(agen up)" if t.kind == "local" else "-"),
                ",".join(t.scopes),
                ",".join(t.namespaces) or "all",
                t.deployment or "-",
                ago(t.created_ms),
                when(t.expires_ms),
                when(t.revoked_ms),
            )
            for t in resp.tokens
        ],
    )


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[
        str,
        typer.Argument(metavar="ID", help="The token's id (`agen token ls`).", show_default=False),
    ],
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Revoke an API token: every Hub refuses it from its next request (admin)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.tokens import RevokeTokenRequest

    req = make_request(RevokeTokenRequest, {"id": "ID"}, id=token_id)
    resp = with_client(hub, token, lambda c: c.call(r.RevokeToken, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print(resp.message)


def whoami(hub: HubOpt = None, token: TokenOpt = None, json_out: JsonOpt = False) -> None:
    """The current token's identity and scopes."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.common import Empty

    resp = with_client(hub, token, lambda c: c.call(r.WhoAmI, Empty()))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    i = resp.info
    print(
        f"{i.name or i.id} ({i.kind}): scopes {', '.join(i.scopes)}; "
        f"namespaces {', '.join(i.namespaces) or 'all'}; trust {i.trust}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
    app.command("whoami")(whoami)
