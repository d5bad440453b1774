"""`agen up` on a PostgreSQL store, as a user runs it: the flag, AGEN_STORE and the home's pointer file,
the same CLI against it, and two Hubs sharing one database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.store.locate import POINTER_NAME
from tests.e2e.harness import Up, wait_until
from tests.e2e.test_work_control import tool_bundle
from tests.fleet_helpers import write_bundle

TERMINAL = ("succeeded", "failed", "cancelled", "expired")


def test_agen_up_on_postgres_runs_tasks_and_approvals_and_the_cli_reads_them(
    tmp_path: Path, pg_url: str
) -> None:
    up = Up(tmp_path / "home", args=("--store", pg_url)).start()
    try:
        assert "store postgresql://" in up.log.read_text()
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        assert up.agen("run", "echo", "hello postgres").stdout.strip() == "You said: hello postgres"

        work = tmp_path / "work"
        gated = tool_bundle(
            tmp_path / "gated",
            "gated",
            work,
            "echo approved >> effects.log",
            permissions={"ask": ["ws.run"], "default": "allow"},
        )
        up.agen("deploy", str(gated))
        task_id = up.agen("run", "gated", "do it", "--no-wait").stdout.strip()
        pending = wait_until(lambda: up.json("approvals")["approvals"], what="an approval")[0]
        assert pending["task_id"] == task_id and pending["tool"] == "ws.run"
        assert up.json("approve", pending["id"])["approval"]["state"] == "approved"
        assert up.agen("wait", task_id).stdout.strip() == "done"
        assert (work / "effects.log").read_text() == "approved\n"

        tasks = up.json("tasks")["tasks"]
        assert sorted(t["state"] for t in tasks) == ["succeeded", "succeeded"]
        echo_id = next(t["id"] for t in tasks if t["id"] != task_id)
        assert "hello postgres" in up.agen("transcript", echo_id).stdout
        trace = up.agen("trace", task_id).stdout
        assert "ws" in trace and "run" in trace
        ps = up.agen("ps").stdout
        assert "echo" in ps and "gated" in ps
        assert any(t["id"] == task_id for t in up.json("tasks", "--state", "succeeded")["tasks"])
    finally:
        up.stop()


def test_agen_store_env_and_the_home_pointer_open_the_same_postgres_store(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Up(tmp_path / "first", args=("--store", pg_url)).start()
    try:
        first.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        first.agen("run", "echo", "kept in postgres")
    finally:
        first.stop()

    monkeypatch.setenv("AGEN_STORE", pg_url)
    by_env = Up(tmp_path / "by-env").start()
    try:
        [task] = by_env.json("tasks")["tasks"]
        assert task["state"] == "succeeded"
        assert "kept in postgres" in by_env.agen("transcript", task["id"]).stdout
    finally:
        by_env.stop()
    monkeypatch.delenv("AGEN_STORE")

    home = tmp_path / "by-pointer"
    home.mkdir(mode=0o700)
    (home / POINTER_NAME).write_text(json.dumps({"url": pg_url}))
    by_pointer = Up(home).start()
    try:
        assert by_pointer.agen("run", "echo", "again").stdout.strip() == "You said: again"
        assert len(by_pointer.json("tasks")["tasks"]) == 2
    finally:
        by_pointer.stop()


def test_agen_up_reads_an_upper_case_postgres_scheme(tmp_path: Path, pg_url: str) -> None:
    """A URL scheme is case-insensitive: `agen up --store POSTGRESQL://…` serves the database (the
    same parser as `agen migrate`, tests/integration/test_migrate.py)."""
    shouted = "POSTGRESQL" + pg_url[pg_url.index("://") :]
    up = Up(tmp_path / "home", args=("--store", shouted)).start()
    try:
        assert "store postgresql://" in up.log.read_text()
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        assert up.agen("run", "echo", "hello").stdout.strip() == "You said: hello"
    finally:
        up.stop()


def test_a_password_in_the_store_url_is_never_printed(tmp_path: Path) -> None:
    url = "postgresql://agen:s3cret-pw@127.0.0.1:1/agen?connect_timeout=2"
    up = Up(tmp_path / "home", args=("--store", url))
    r = up.agen("up", "--headless", "--listen", f"127.0.0.1:{up.port}", "--store", url, check=False)
    assert r.returncode != 0
    assert "s3cret-pw" not in r.stdout + r.stderr
    assert "postgresql://agen:***@127.0.0.1:1/agen" in r.stderr


@pytest.mark.slow
def test_two_hubs_on_one_postgres_database_elect_one_leader_and_run_every_task_once(
    tmp_path: Path, pg_url: str
) -> None:
    """The Done-when of issue #18: two `agen up` processes (their own AGEN_HOMEs and ports) on one database."""
    a = Up(tmp_path / "a", args=("--store", pg_url)).start()
    b = Up(tmp_path / "b", args=("--store", pg_url)).start()
    try:
        a.agen(
            "deploy",
            str(
                write_bundle(
                    tmp_path / "echo",
                    "echo",
                    config={"kind": "pool", "scale": {"min": 2, "max": 2, "maxConcurrency": 4}},
                )
            ),
        )
        ids: list[str] = []
        for i in range(30):
            hub = a if i % 2 else b
            ids.append(hub.agen("run", "echo", f"job {i}", "--no-wait").stdout.strip())

        def finished() -> list[dict[str, object]] | None:
            tasks = [t for t in a.json("tasks", "--limit", "1000")["tasks"] if t["id"] in ids]
            done = [t for t in tasks if t["state"] in TERMINAL]
            return tasks if len(done) == len(ids) else None

        tasks = wait_until(finished, 120, "every task to end")
        assert {t["state"] for t in tasks} == {"succeeded"}
        for i, task_id in enumerate(ids):  # every task ended once, with its own answer
            assert a.agen("wait", task_id).stdout.strip() == f"You said: job {i}"

        import psycopg

        with psycopg.connect(pg_url) as conn:
            leases = conn.execute(
                "SELECT holder, epoch, expires_ms FROM leases WHERE name = 'hub-leader'"
            ).fetchall()
            elected = conn.execute(
                "SELECT data FROM events WHERE type = 'leader.elected'"
                " AND data LIKE '%\"hub-leader\"%'"
            ).fetchall()
            runs = conn.execute(
                "SELECT task_id, COUNT(*) FROM runs WHERE task_id = ANY(%s) GROUP BY task_id",
                (ids,),
            ).fetchall()
            attempts = conn.execute(
                "SELECT attempts FROM tasks WHERE id = ANY(%s)", (ids,)
            ).fetchall()
            leased = conn.execute(
                "SELECT task_id, data FROM events WHERE type IN ('task.leased', 'task.started')"
                " AND task_id = ANY(%s)",
                (ids,),
            ).fetchall()
        assert len(leases) == 1 and len(elected) == 1  # one leader, never taken over while both ran
        assert sorted(r[0] for r in runs) == sorted(ids) and {r[1] for r in runs} == {1}
        assert {r[0] for r in attempts} == {1}  # no task was leased twice
        assert sorted(r[0] for r in leased) == sorted(ids)
        nests = {json.loads(r[1])["nest_id"] for r in leased}
        assert len(nests) == 2, nests  # both Hubs' Nests leased from the one queue
    finally:
        b.stop()
        a.stop()


def test_process_backend_instances_open_the_postgres_store_of_their_hub(
    tmp_path: Path, pg_url: str
) -> None:
    up = Up(tmp_path / "home", args=("--store", pg_url, "--backend", "process")).start()
    try:
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        assert up.agen("run", "echo", "from a child").stdout.strip() == "You said: from a child"
    finally:
        up.stop()


def test_a_one_shot_agen_run_with_no_agen_up_runs_on_the_postgres_store(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_STORE", pg_url)
    home = Up(tmp_path / "home")  # never started: its CLI runs the one-shot's embedded Hub
    (tmp_path / "home").mkdir(mode=0o700)
    bundle = write_bundle(tmp_path / "echo", "echo")
    assert home.agen("run", str(bundle), "embedded").stdout.strip() == "You said: embedded"
    assert not (tmp_path / "home" / "agen.db").exists()  # it went to Postgres, not a SQLite file

    import psycopg

    with psycopg.connect(pg_url) as conn:
        states = conn.execute("SELECT state FROM tasks").fetchall()
    assert states == [("succeeded",)]
