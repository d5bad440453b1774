"""``agen store host-role``: a Postgres role for Nests and hosts, limited to the run-data tables.

Run by a role that owns the tables (the Hub's, or a superuser), in one transaction: the role is made
(or updated: its password when AGEN_HOST_DB_PASSWORD is set, its grants always), every privilege it had
on the schema's tables is taken back, and it gets exactly: read and write on the host tables
(agen.store.host_tables), add-and-read on the event log, read on schema_migrations, and three columns of
tasks (whether a task is paused), of its own namespaces' tasks only. So it cannot read or write the Hub's keys, tokens, join tokens,
platform secrets, tasks, deployments or Nests.

Row-level security is enabled on the host tables (the first run does it). Every host role gets a policy
on each: every row, or with ``--namespace`` only the rows of those namespaces, for reads and writes
(child tables follow their parent row). The tables' owner, the Hub, is not subject to policies. A role
made before a table was added to the host tables has no policy on it, and sees none of its rows, until
the command is run again for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agen.errors import InvalidError
from agen.store.host_tables import HOST_READS, HOST_TABLES, TASK_PAUSE_COLUMNS, HostTable
from agen.store.locate import redact_url

ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
PASSWORD_ENV = "AGEN_HOST_DB_PASSWORD"


@dataclass(frozen=True)
class HostRole:
    role: str
    created: bool
    namespaces: tuple[str, ...]  # empty: every namespace
    url: str  # the role's store URL, without its password


def policy_name(role: str) -> str:
    return f"agen_host_{role}"


def check_request(role: str, namespaces: list[str]) -> None:
    if not ROLE_NAME.fullmatch(role):
        raise InvalidError(
            f"--role {role!r}: use lower-case letters, digits and _ (e.g. agen_host)",
            field="--role",
        )
    for ns in namespaces:
        if not NAMESPACE.fullmatch(ns):
            raise InvalidError(f"--namespace {ns!r} is not a namespace name", field="--namespace")


def _visible(table: HostTable, namespaces: tuple[str, ...]) -> Any:
    """The policy's condition: which rows of ``table`` the role may read and write."""
    from psycopg import sql

    if table.parent is not None:
        parent, key, column = table.parent
        return sql.SQL("EXISTS (SELECT 1 FROM {} p WHERE p.{} = {}.{})").format(
            sql.Identifier(parent),
            sql.Identifier(key),
            sql.Identifier(table.name),
            sql.Identifier(column),
        )
    if not namespaces:
        return sql.SQL("true")
    return sql.SQL("namespace = ANY ({})").format(
        sql.SQL("ARRAY[{}]::text[]").format(sql.SQL(", ").join(map(sql.Literal, namespaces)))
    )


def statements(
    role: str, namespaces: tuple[str, ...], password: str | None, *, exists: bool, schema: str
) -> list[Any]:
    """What makes ``role`` a host role of the store in ``schema``, in order (psycopg ``sql.Composed``,
    run in one transaction)."""
    from psycopg import sql

    who, in_schema = sql.Identifier(role), sql.Identifier(schema)
    out: list[Any] = []
    attributes: Any = sql.SQL("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS")
    if password is not None:
        attributes = sql.SQL("{} PASSWORD {}").format(attributes, sql.Literal(password))
    out.append(
        sql.SQL("{} ROLE {} {}").format(sql.SQL("ALTER" if exists else "CREATE"), who, attributes)
    )
    out.append(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(in_schema, who))
    out.append(sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(in_schema, who))
    out.append(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(in_schema, who))
    for table in HOST_TABLES:
        name = sql.Identifier(schema, table.name)
        rights = "SELECT, INSERT" if table.append_only else "SELECT, INSERT, UPDATE, DELETE"
        out.append(sql.SQL("GRANT {} ON {} TO {}").format(sql.SQL(rights), name, who))
        out.append(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name))
        policy = sql.Identifier(policy_name(role))
        out.append(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(policy, name))
        visible = _visible(table, namespaces)
        out.append(
            sql.SQL("CREATE POLICY {} ON {} TO {} USING ({}) WITH CHECK ({})").format(
                policy, name, who, visible, visible
            )
        )
    for read in HOST_READS:
        out.append(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(schema, read), who))
    columns = sql.SQL(", ").join(map(sql.Identifier, TASK_PAUSE_COLUMNS))
    tasks = sql.Identifier(schema, "tasks")
    out.append(sql.SQL("GRANT SELECT ({}) ON {} TO {}").format(columns, tasks, who))
    # The pause columns of its own namespaces' tasks only: the Hub owns tasks (no policy binds it),
    # and every host role reads through a policy of its own.
    out.append(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(tasks))
    policy = sql.Identifier(policy_name(role))
    out.append(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(policy, tasks))
    out.append(
        sql.SQL("CREATE POLICY {} ON {} FOR SELECT TO {} USING ({})").format(
            policy, tasks, who, _visible(HostTable("tasks"), namespaces)
        )
    )
    return out


def make_host_role(
    admin_url: str, role: str, namespaces: list[str], password: str | None
) -> HostRole:
    """Create or update ``role`` on the Store at ``admin_url`` (see the module docstring)."""
    import psycopg

    from agen.errors import ConflictError, StoreError
    from agen.store.migrate import known_migrations

    check_request(role, namespaces)
    where = redact_url(admin_url)
    try:
        with psycopg.connect(admin_url, connect_timeout=10) as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()
            migrated = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
            if schema is None or schema[0] is None or migrated is None or migrated[0] is None:
                raise InvalidError(
                    f"{where} holds no agen store (no schema_migrations): start a Hub on it first "
                    "(`agen hub serve --store …`), then make the host role",
                    field="--store",
                )
            version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            latest = known_migrations("postgres")[-1].version
            if version is None or version[0] != latest:
                raise InvalidError(
                    f"{where} is at schema version {version[0] if version else 0}, this agen ships "
                    f"{latest}: run the Hub of this version on it first, then make the host role",
                    field="--store",
                )
            row = conn.execute(
                "SELECT rolsuper, rolbypassrls, EXISTS (SELECT 1 FROM pg_tables t WHERE"
                " t.schemaname = current_schema() AND t.tableowner = r.rolname)"
                " FROM pg_roles r WHERE rolname = %s",
                (role,),
            ).fetchone()
            if row is not None and any(row):
                raise ConflictError(
                    f"--role {role}: that role is a superuser, bypasses row-level security or owns "
                    "the store's tables (the Hub's own role?); name a role of its own for hosts",
                    field="--role",
                )
            if row is None and password is None:
                raise InvalidError(
                    f"role {role} does not exist yet: set {PASSWORD_ENV} to the password it gets",
                    field=PASSWORD_ENV,
                )
            with conn.transaction():
                for statement in statements(
                    role, tuple(namespaces), password, exists=row is not None, schema=schema[0]
                ):
                    conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege as e:
        raise StoreError(
            f"{where}: not allowed to make a host role ({str(e).strip()}); run this with the "
            "role that owns the store's tables (the Hub's) or a superuser",
            store=where,
        ) from None
    except psycopg.Error as e:
        raise StoreError(
            f"cannot make the host role on {where}: {str(e).strip()}", store=where
        ) from None
    return HostRole(
        role=role, created=row is None, namespaces=tuple(namespaces), url=_role_url(admin_url, role)
    )


def _role_url(admin_url: str, role: str) -> str:
    """The admin URL with the host role as its user and no password (the password is the operator's)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(admin_url)
    host = parts.hostname or ""
    netloc = f"{role}@{host}" + (f":{parts.port}" if parts.port else "")
    if ":" in host:
        netloc = f"{role}@[{host}]" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
