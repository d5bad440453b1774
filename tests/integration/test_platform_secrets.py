"""A platform secret, end to end: set by an admin (`agen secret set`, value on stdin), handed by the Hub to
the Nest of a deployment it is granted to, into a real MCP server's environment; never returned by the API,
never in a transcript, and never anywhere in the database unsealed (every table and column scanned, SQLite
and Postgres), also after `agen migrate` carried it, still sealed, to Postgres."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agen.api import registry as r
from agen.cli import app
from agen.client import Client
from agen.errors import AgenError, DeniedError
from agen.hub.auth import LOCAL_NEST, Principal
from agen.node import LocalNode
from agen.store import SQLiteStore, Store
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.secrets import GetPlatformSecretsRequest, SetSecretRequest
from agen.wire.tasks import GetTaskRequest, SubmitTaskRequest, Task
from tests.cli_helpers import run_agen
from tests.fleet_helpers import files_b64, write_bundle
from tests.integration.mcp_helpers import TEST_SERVER
from tests.observe_helpers import Embedded, http_hub

KEK = "integration-kek-" + "k" * 32
VALUE = "plat-4be1f09a-keep-out-of-the-db"
SCRIPT: list[dict[str, Any]] = [
    {"toolCalls": [{"name": "t_env", "arguments": {"name": "TOKEN"}}]},
    {"text": "checked the token"},
]


def secret_bundle(root: Path, name: str) -> Path:
    """A bundle whose MCP server gets ${API_TOKEN} (source platform) as TOKEN and reports it back."""
    config = {"kind": "pool", "permissions": {"default": "allow"}}
    bundle = write_bundle(root / name, name, script=SCRIPT, config=config)
    (bundle / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "t": {
                        "command": sys.executable,
                        "args": [TEST_SERVER],
                        "env": {"TOKEN": "${API_TOKEN}"},
                    }
                }
            }
        )
    )
    (bundle / "x-agen" / "secrets.json").write_text(
        json.dumps({"secrets": {"API_TOKEN": {"source": "platform"}}})
    )
    return bundle


@asynccontextmanager
async def node_on(store: Store, backend: str = "inproc") -> AsyncIterator[LocalNode]:
    node = LocalNode(store, tick_s=0.2, heartbeat_s=0.2, backend=backend)
    await node.start()
    try:
        yield node
    finally:
        await node.drain(0)


async def deploy(client: Client, root: Path, name: str) -> None:
    await client.call(
        r.CreateDeployment, CreateDeploymentRequest(files=files_b64(secret_bundle(root, name)))
    )


async def run(client: Client, deployment: str, text: str = "go") -> Task:
    task = (
        await client.call(r.SubmitTask, SubmitTaskRequest(deployment=deployment, input=text))
    ).task
    return (await client.call(r.GetTask, GetTaskRequest(id=task.id, wait_seconds=60))).task


async def tool_result(store: Store, task_id: str) -> str:
    row = await store.one(
        "SELECT m.content FROM messages m JOIN runs r ON r.id = m.run_id"
        " WHERE r.task_id = ? AND m.role = 'tool'",
        (task_id,),
    )
    assert row is not None
    return str(row["content"])


def scan_sqlite(path: Path, needle: str) -> list[str]:
    """Every table.column of the SQLite database whose value holds ``needle`` (text or bytes)."""
    conn = sqlite3.connect(path)
    found = []
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert "platform_secrets" in tables
        for table in tables:
            cur = conn.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            for row in cur:
                for col, value in zip(cols, row, strict=True):
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    if needle.encode() in raw:
                        found.append(f"{table}.{col}")
    finally:
        conn.close()
    for f in path.parent.glob(path.name + "*"):  # the file itself and its -wal, raw
        if needle.encode() in f.read_bytes():
            found.append(f.name)
    return found


def scan_postgres(url: str, needle: str) -> list[str]:
    """Every table.column of the Postgres database whose value (as text) holds ``needle``."""
    import psycopg

    found = []
    with psycopg.connect(url) as conn:
        cols = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall()
        assert ("platform_secrets", "value", "text") in cols
        for table, col, kind in cols:
            where = (
                f'position(%s::bytea in "{col}") > 0'  # raw bytes (bundle archives)
                if kind == "bytea"
                else f'position(%s in "{col}"::text) > 0'
            )
            arg: str | bytes = needle.encode() if kind == "bytea" else needle
            hit = conn.execute(f'SELECT 1 FROM "{table}" WHERE {where} LIMIT 1', (arg,)).fetchone()
            if hit is not None:
                found.append(f"{table}.{col}")
    return found


@pytest.mark.parametrize("backend", ["inproc", "process"])
async def test_a_granted_platform_secret_reaches_the_mcp_server_and_the_database_holds_it_only_sealed(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    db = tmp_path / "hub.db"
    store = await SQLiteStore.open(db)
    try:
        async with node_on(store, backend) as node:
            client = Client.in_process(node.hub)
            resp = await client.call(
                r.SetSecret, SetSecretRequest(name="API_TOKEN", value=VALUE, grants=["sec"])
            )
            assert resp.secret.sealed and VALUE not in resp.model_dump_json()
            await deploy(client, tmp_path, "sec")
            task = await run(client, "sec", f"is {VALUE} the token?")
            assert task.state == "succeeded", task.error
            assert task.input == "is [REDACTED] the token?"  # typed in: masked in the task row too
            # the server's answer was exactly the value (so the redactor masked all of it)
            assert await tool_result(store, task.id) == "[REDACTED]"
        assert scan_sqlite(db, VALUE) == []
    finally:
        await store.close()
    assert scan_sqlite(db, VALUE) == []


async def test_a_deployment_not_granted_the_secret_does_not_start_and_says_how_to_grant_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        async with node_on(store) as node:
            client = Client.in_process(node.hub)
            await client.call(
                r.SetSecret, SetSecretRequest(name="API_TOKEN", value=VALUE, grants=["sec"])
            )
            await deploy(client, tmp_path, "other")
            await client.call(
                r.SubmitTask, SubmitTaskRequest(deployment="other", input="go")
            )  # queued work: the deployment scales up and its instance tries to start
            reason = None
            for _ in range(600):
                reason = await store.scalar(
                    "SELECT exit_reason FROM instances WHERE state = 'failed' LIMIT 1"
                )
                if reason:
                    break
                await asyncio.sleep(0.05)
            assert reason is not None and "agen secret set API_TOKEN --for other" in reason
    finally:
        await store.close()


async def test_only_a_nest_running_the_deployment_receives_its_secret_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        async with node_on(store) as node:
            admin = Client.in_process(node.hub)
            await admin.call(
                r.SetSecret, SetSecretRequest(name="API_TOKEN", value=VALUE, grants=["sec"])
            )
            await deploy(admin, tmp_path, "sec")
            assert (await run(admin, "sec")).state == "succeeded"
            dep_id = await store.scalar("SELECT id FROM deployments WHERE name = 'sec'")
            own = GetPlatformSecretsRequest(nest_id=node.manager.nest_id, deployment_id=dep_id)
            nest = Client.in_process(node.hub, LOCAL_NEST)
            assert (await nest.call(r.GetPlatformSecrets, own)).values == {"API_TOKEN": VALUE}
            with pytest.raises(DeniedError, match="GetPlatformSecrets is a Nest call"):
                await admin.call(r.GetPlatformSecrets, own)
            other = Principal(
                id="t2", name="n2", scopes=frozenset({"nest"}), kind="nest", nest_id="nest-2"
            )
            stranger = Client.in_process(node.hub, other)
            with pytest.raises(DeniedError, match="cannot read secrets for nest"):
                await stranger.call(r.GetPlatformSecrets, own)
            with pytest.raises(DeniedError, match="not assigned to nest nest-2"):
                await stranger.call(
                    r.GetPlatformSecrets,
                    GetPlatformSecretsRequest(nest_id="nest-2", deployment_id=dep_id),
                )
    finally:
        await store.close()


async def test_agen_secret_reads_the_value_from_stdin_and_never_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        async with node_on(store) as node:
            e = Embedded(node, Client.in_process(node.hub), tmp_path)
            async with http_hub(e) as (url, token):

                async def agen(*args: str, stdin: str | None = None) -> tuple[int, str]:
                    res = await asyncio.to_thread(
                        CliRunner().invoke,
                        app,
                        [*args, "--hub", url, "--token", token],
                        input=stdin,
                        env={"COLUMNS": "140"},
                    )
                    if isinstance(res.exception, AgenError):  # as agen.cli.main() prints it
                        return res.exception.exit_code, f"error: {res.exception}"
                    return res.exit_code, res.stdout + res.stderr

                code, out = await agen(
                    "secret", "set", "API_TOKEN", "--for", "sec", "--for", "bot", stdin=VALUE + "\n"
                )
                assert code == 0, out
                assert "granted to bot, sec" in out and VALUE not in out
                code, out = await agen("secret", "ls", "--json")
                [row] = json.loads(out)["secrets"]
                assert row["name"] == "API_TOKEN" and row["grants"] == ["bot", "sec"]
                assert row["sealed"] is True and VALUE not in out
                code, out = await agen("secret", "ls")
                assert code == 0 and "API_TOKEN" in out and "bot,sec" in out and VALUE not in out
                code, out = await agen("secret", "rm", "API_TOKEN")
                assert code == 0, out
                code, out = await agen("secret", "rm", "API_TOKEN")
                assert code != 0 and "no platform secret 'API_TOKEN'" in out
        value = await store.scalar("SELECT count(*) FROM platform_secrets")
        assert value == 0
    finally:
        await store.close()


async def test_agen_migrate_carries_secrets_sealed_to_postgres_where_a_run_still_gets_them(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    from agen.store.postgres import PostgresStore

    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    db = tmp_path / "hub.db"
    store = await SQLiteStore.open(db)
    try:
        async with node_on(store) as node:
            client = Client.in_process(node.hub)
            await client.call(
                r.SetSecret, SetSecretRequest(name="API_TOKEN", value=VALUE, grants=["sec"])
            )
            await deploy(client, tmp_path, "sec")
        sealed = await store.scalar("SELECT value FROM platform_secrets")
    finally:
        await store.close()

    pg_url = request.getfixturevalue("pg_url")
    code, _, err = await asyncio.to_thread(
        run_agen, capsys, "migrate", "--from", f"sqlite:{db}", "--to", pg_url
    )
    assert code == 0, err
    pg = await PostgresStore.open(pg_url)
    try:
        # the sealed bytes as they were: copied, never opened
        assert await pg.scalar("SELECT value FROM platform_secrets") == sealed
        assert scan_postgres(pg_url, VALUE) == []
        async with node_on(pg) as node:
            client = Client.in_process(node.hub)
            task = await run(client, "sec")
            assert task.state == "succeeded", task.error
            assert await tool_result(pg, task.id) == "[REDACTED]"
        assert scan_postgres(pg_url, VALUE) == []
    finally:
        await pg.close()
