"""`agen store host-role` on a real Postgres (seed 000 §10): a Nest whose --store is the host role's
URL runs tasks (inproc and process hosts), and that role cannot read or write the Hub's keys, tokens,
tasks or fleet state; with --namespace it sees and writes only those namespaces' run data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agen.store.host_tables import HOST_TABLES
from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_run import HELLO, Nest

PASSWORD = "host-role-test-password"


def _as(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


def _refused(url: str, sql: str) -> str:
    """The error ``sql`` gets as the role of ``url`` (the test fails if it is allowed)."""
    with _as(url) as conn, pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    return str(e.value)


def _host_role(hub: Up, pg_url: str, *args: str) -> dict[str, Any]:
    r = hub.agen(
        "store", "host-role", "--store", pg_url, *args, "--json",
        env_extra={"AGEN_HOST_DB_PASSWORD": PASSWORD},
    )  # fmt: skip
    return dict(json.loads(r.stdout))


def _with_password(url: str) -> str:
    user, _, rest = url.partition("@")
    return f"{user}:{PASSWORD}@{rest}"


def test_a_nest_on_the_host_role_runs_tasks_and_the_role_cannot_touch_the_hubs_state(
    tmp_path: Path, pg_url: str
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve"), args=("--store", pg_url)).start()
    nests: list[Nest] = []
    try:
        role = _host_role(hub, pg_url)
        assert role["role"] == "agen_host" and role["created"] and role["namespaces"] == []
        host_url = _with_password(role["url"])
        for ns in ("a", "b"):
            hub.agen("deploy", str(HELLO), "-n", ns)
        join = hub.json("join-token", "create")["token"]
        # The process backend: the Nest and each `agen host serve` child open the store as the role.
        args = ("--join-token", join, "--backend", "process")
        nests.append(Nest(hub, tmp_path / "proc", "proc", *args, store=host_url))
        for ns in ("a", "b", "a", "b"):
            ran = hub.agen("run", "hello", f"hi {ns}", "-n", ns, "--timeout", "2m", timeout=150)
            assert "succeeded" in ran.stderr, ran.stderr
        with _as(pg_url) as admin:
            statuses = [s for (s,) in admin.execute("SELECT status FROM runs")]
            assert statuses == ["succeeded"] * 4, statuses

        # The role reads and writes run data only.
        for table in ("hub_keys", "tokens", "platform_secrets", "nests", "deployments"):
            assert "permission denied" in _refused(host_url, f"SELECT * FROM {table}")
        assert "permission denied" in _refused(host_url, "SELECT * FROM tasks")
        assert "permission denied" in _refused(host_url, "SELECT input, outcome FROM tasks")
        for write in (
            "UPDATE tasks SET held = 1",
            "DELETE FROM hub_keys",
            "INSERT INTO tokens (id, kind, hash, scopes, namespaces, trust, created_ms)"
            " VALUES ('x', 'api', 'h', '[\"admin\"]', '[]', 'trusted', 0)",
            "UPDATE nests SET state = 'active'",
            "DELETE FROM events",
            "CREATE TABLE mine (x int)",
        ):
            assert "permission denied" in _refused(host_url, write), write
        with _as(host_url) as host:
            [(seen,)] = host.execute("SELECT COUNT(*) FROM runs").fetchall()
            assert seen == 4  # every namespace: no --namespace

        # Run again, for a role of its own: the same command updates it (its password stays).
        again = hub.agen("store", "host-role", "--store", pg_url, "--json")
        assert json.loads(again.stdout)["created"] is False
    finally:
        for n in nests:
            n.stop()
        hub.stop()


def test_a_host_role_for_one_namespace_sees_and_writes_only_its_rows(
    tmp_path: Path, pg_url: str
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve"), args=("--store", pg_url)).start()
    nest: Nest | None = None
    try:
        every = _with_password(_host_role(hub, pg_url)["url"])
        only_a = _host_role(hub, pg_url, "--role", "agen_host_a", "--namespace", "a")
        assert only_a["namespaces"] == ["a"]
        a_url = _with_password(only_a["url"])
        for ns in ("a", "b"):
            hub.agen("deploy", str(HELLO), "-n", ns)
        join = hub.json("join-token", "create")["token"]
        nest = Nest(hub, tmp_path / "n", "n", "--join-token", join, store=every)
        for ns in ("a", "b"):
            assert "succeeded" in hub.agen("run", "hello", "hi", "-n", ns, "--timeout", "2m").stderr

        with _as(a_url) as host:

            def seen(sql: str) -> set[Any]:
                return {r[0] for r in host.execute(sql)}

            assert seen("SELECT namespace FROM runs") == {"a"}
            assert seen("SELECT namespace FROM conversations") == {"a"}
            assert seen("SELECT namespace FROM spans") == {"a"}
            assert seen("SELECT namespace FROM events") == {"a"}
            with _as(pg_url) as admin:
                a_tasks = {
                    r[0] for r in admin.execute("SELECT id FROM tasks WHERE namespace = 'a'")
                }
            # the pause columns of its own namespace's tasks only
            assert seen("SELECT id FROM tasks") == a_tasks and a_tasks
            # child tables follow their conversation or run
            assert seen(
                "SELECT c.namespace FROM messages m JOIN conversations c ON c.id = m.conversation_id"
            ) == {"a"}
            [(n_messages,)] = host.execute("SELECT COUNT(*) FROM messages").fetchall()
            with _as(pg_url) as admin:
                [(a_messages,)] = admin.execute(
                    "SELECT COUNT(*) FROM messages m JOIN conversations c ON c.id ="
                    " m.conversation_id WHERE c.namespace = 'a'"
                ).fetchall()
                b_run = admin.execute("SELECT id FROM runs WHERE namespace = 'b'").fetchone()
            assert n_messages == a_messages > 0
            assert b_run is not None
            # writes outside its namespaces are refused, and so are changes to b's rows
            assert (
                host.execute(
                    "UPDATE runs SET turns = turns + 1 WHERE id = %s", (b_run[0],)
                ).rowcount
                == 0
            )
        for refused in (
            "INSERT INTO events (id, namespace, type, severity, labels, data, created_ms)"
            " VALUES ('e1', 'b', 'x', 'info', '{}', '{}', 0)",
            "UPDATE runs SET namespace = 'b' WHERE namespace = 'a'",
        ):
            assert "row-level security" in _refused(a_url, refused), refused
        # A Nest that runs namespace a only, on a's role (--store-for-only: no fallback store).
        assert nest.stop() == 0
        join = hub.json("join-token", "create")["token"]
        only = ("--store-for", f"a={a_url}", "--store-for-only", "--join-token", join)
        nest = Nest(hub, tmp_path / "na", "na", *only, store="")
        hub.agen("nests", "revoke", "n")  # its deployments move to na
        ran = hub.agen("run", "hello", "only a", "-n", "a", "--timeout", "2m")
        assert "succeeded" in ran.stderr
        wait_until(
            lambda: "namespace b has no --store-for on this Nest" in nest.log.read_text(),
            60,
            "b's instance refused",
        )
        with _as(pg_url) as admin:
            [(a_runs,)] = admin.execute(
                "SELECT COUNT(*) FROM runs WHERE namespace = 'a'"
            ).fetchall()
            [(b_runs,)] = admin.execute(
                "SELECT COUNT(*) FROM runs WHERE namespace = 'b'"
            ).fetchall()
        assert (a_runs, b_runs) == (2, 1)
        # every host table has the role's policy (a table added later would need the command again)
        with _as(pg_url) as admin:
            policed = {
                t
                for (t,) in admin.execute(
                    "SELECT tablename FROM pg_policies WHERE policyname = 'agen_host_agen_host_a'"
                )
            }
        assert policed == {t.name for t in HOST_TABLES} | {"tasks"}  # tasks: read only
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()
