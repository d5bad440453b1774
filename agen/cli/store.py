"""``agen store host-role``: the least-privilege Postgres role Nests get."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    JsonOpt,
    err,
    group,
    print_json,
)

store_app = group(help="The Store's database roles.", no_args_is_help=True)


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
    from agen.store.locate import is_postgres_url, locate

    if not is_postgres_url(store):
        raise InvalidError(
            "--store: a host role is a Postgres role; give the postgres://… URL of the store "
            "(a SQLite store has no roles: its Nests share the file)",
            field="--store",
        )
    made = make_host_role(
        locate(store).url,
        role,
        list(dict.fromkeys(namespace or [])),
        os.environ.get(PASSWORD_ENV) or None,
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
    app.add_typer(store_app, name="store")
