"""The built-in MCP servers (`agen mcp workspace`, `agen mcp sql`) run as real subprocesses."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agen.runner.tools.base import Tool
from agen.runner.tools.mcp import McpToolset
from tests.integration.mcp_helpers import ctx, eventually, pid_alive, stdio_toolset


@pytest.fixture
async def workspace(tmp_path: Path) -> AsyncIterator[tuple[Path, dict[str, Tool], McpToolset]]:
    root = tmp_path / "root"
    root.mkdir()
    ts = stdio_toolset(
        ["mcp", "workspace", "--root", str(root), "--run-timeout", "30s"], command="agen", name="ws"
    )
    tools = {t.name: t for t in await ts.start()}
    yield root, tools, ts
    await ts.close()


async def call(tools: dict[str, Tool], name: str, **args: object) -> tuple[str, bool]:
    result = await tools[f"ws.{name}"].call(dict(args), ctx())
    return result.content, result.is_error


async def test_workspace_file_tools_read_write_edit_glob_grep(
    workspace: tuple[Path, dict[str, Tool], McpToolset],
) -> None:
    root, tools, _ = workspace
    assert {t.name: t.read_only for t in tools.values()} == {
        "ws.read": True,
        "ws.glob": True,
        "ws.grep": True,
        "ws.write": False,
        "ws.edit": False,
        "ws.run": False,
    }
    text, err = await call(tools, "write", path="src/deep/a.py", content="one\ntwo\nthree\nfour\n")
    assert not err and (root / "src/deep/a.py").read_text() == "one\ntwo\nthree\nfour\n"

    text, _ = await call(tools, "read", path="src/deep/a.py", offset=2, limit=2)
    assert text.splitlines()[:2] == ["     2\ttwo", "     3\tthree"]
    assert "offset=4" in text

    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    text, err = await call(tools, "read", path="blob.bin")
    assert not err and "binary file (8 bytes)" in text

    text, err = await call(tools, "edit", path="src/deep/a.py", old_string="two", new_string="TWO")
    assert not err and "TWO" in (root / "src/deep/a.py").read_text()
    text, err = await call(tools, "edit", path="src/deep/a.py", old_string="absent", new_string="x")
    assert err and "not found" in text
    (root / "dup.txt").write_text("x\nx\n")
    text, err = await call(tools, "edit", path="dup.txt", old_string="x", new_string="y")
    assert err and "occurs 2 times" in text and (root / "dup.txt").read_text() == "x\nx\n"

    (root / "b.py").write_text("print('hi')\n")
    text, _ = await call(tools, "glob", pattern="**/*.py")
    assert text.splitlines() == ["b.py", "src/deep/a.py"]

    text, _ = await call(tools, "grep", pattern=r"^TW.$", context=1)
    assert text.splitlines() == [
        "src/deep/a.py-1-one",
        "src/deep/a.py:2:TWO",
        "src/deep/a.py-3-three",
    ]


async def test_workspace_refuses_paths_that_leave_the_root(
    workspace: tuple[Path, dict[str, Tool], McpToolset],
    tmp_path: Path,
) -> None:
    root, tools, _ = workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    (root / "link").symlink_to(outside)

    for name, args in [
        ("read", {"path": "../outside/secret.txt"}),
        ("read", {"path": str(outside / "secret.txt")}),
        ("read", {"path": "link/secret.txt"}),
        ("write", {"path": "link/new.txt", "content": "x"}),
        ("write", {"path": "../escape.txt", "content": "x"}),
        ("edit", {"path": "link/secret.txt", "old_string": "do", "new_string": "did"}),
        ("grep", {"pattern": "read", "path": "link"}),
        ("glob", {"pattern": "*", "path": "/etc"}),
    ]:
        text, err = await call(tools, name, **args)
        assert err, (name, args)
        assert "outside the workspace root" in text and str(root.resolve()) in text
        assert str(args["path"]) in text
    assert not (outside / "new.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert (outside / "secret.txt").read_text() == "do not read"
    # a symlink out is skipped by a whole-tree search, not followed
    text, _ = await call(tools, "grep", pattern="do not read")
    assert text.startswith("no matches")


async def test_run_executes_in_the_root_and_a_timed_out_command_loses_its_whole_process_group(
    workspace: tuple[Path, dict[str, Tool], McpToolset],
) -> None:
    root, tools, _ = workspace
    text, err = await call(tools, "run", command="pwd; echo out; echo err >&2; exit 3")
    assert not err
    assert (
        str(root.resolve()) in text and "out" in text and "err" in text and "[exit code 3]" in text
    )

    script = (
        "sh -c 'trap \"\" TERM; echo $$ > stubborn.pid; while true; do sleep 0.1; done' & "
        "echo $$ > leader.pid; sleep 300"
    )
    text, err = await call(tools, "run", command=script, timeout_seconds=1)
    assert "timed out after 1s" in text
    pids = [int((root / f).read_text()) for f in ("leader.pid", "stubborn.pid")]
    assert await eventually(lambda: not any(pid_alive(p) for p in pids), 5)

    text, err = await call(tools, "run", command="echo x", timeout_seconds=601)
    assert err and "between 0 and 600" in text


async def test_run_output_is_capped_and_no_run_leaves_the_tool_out(tmp_path: Path) -> None:
    ts = stdio_toolset(
        ["mcp", "workspace", "--root", str(tmp_path), "--no-run"], command="agen", name="ws"
    )
    tools = {t.name for t in await ts.start()}
    await ts.close()
    assert "ws.run" not in tools and "ws.read" in tools

    from agen.mcpservers._shell import run_command

    result = await run_command("yes abcdefgh | head -c 100000", str(tmp_path), 30, cap=1000)
    assert result.truncated > 90_000
    assert len(result.output) < 1100


@pytest.fixture
def sales_db(tmp_path: Path) -> Path:
    path = tmp_path / "sales.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
    conn.executemany(
        "INSERT INTO sales (region, amount) VALUES (?, ?)",
        [("eu" if i % 2 else "us", i) for i in range(600)],
    )
    conn.commit()
    conn.close()
    return path


async def test_sql_server_reads_sqlite_caps_rows_and_refuses_writes(sales_db: Path) -> None:
    os.environ["AGEN_TEST_DSN"] = f"sqlite:///{sales_db}"
    try:
        ts = stdio_toolset(
            ["mcp", "sql", "--dsn-env", "DB_URL"],
            command="agen",
            name="sql",
            env={"DB_URL": "${AGEN_TEST_DSN}"},
            secrets={"AGEN_TEST_DSN": {"source": "env"}},
        )
        tools = {t.name: t for t in await ts.start()}
    finally:
        del os.environ["AGEN_TEST_DSN"]
    try:
        assert tools["sql.query"].read_only and not tools["sql.query"].side_effect
        result = await tools["sql.query"].call(
            {
                "sql": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
            },
            ctx(),
        )
        assert result.content.splitlines()[:3] == ["region\ttotal", "eu\t90000.0", "us\t89700.0"]
        many = await tools["sql.query"].call({"sql": "SELECT * FROM sales"}, ctx())
        lines = many.content.splitlines()
        assert len(lines) == 1 + 500 + 1 and "more rows matched" in lines[-1]
        for statement in (
            "DELETE FROM sales",
            "insert into sales (region) values ('x')",
            "WITH x AS (SELECT 1) DELETE FROM sales",
            "/* hi */ DROP TABLE sales",
        ):
            refused = await tools["sql.query"].call({"sql": statement}, ctx())
            assert refused.is_error and "read-only" in refused.content, statement
        assert (await tools["sql.tables"].call({}, ctx())).content == "sales"
    finally:
        await ts.close()
    assert sqlite3.connect(sales_db).execute("SELECT COUNT(*) FROM sales").fetchone()[0] == 600


async def test_sql_server_runs_only_read_pragmas_and_reports_typos_as_syntax_errors(
    sales_db: Path,
) -> None:
    ts = stdio_toolset(
        ["mcp", "sql"], command="agen", name="sql", env={"AGEN_SQL_DSN": f"sqlite:///{sales_db}"}
    )
    query = {t.name: t for t in await ts.start()}["sql.query"]
    try:
        for statement in (
            "PRAGMA query_only = 0",
            "pragma main.query_only=OFF",
            "EXPLAIN PRAGMA query_only = 0",
            "PRAGMA writable_schema = 1",
            "PRAGMA journal_mode = WAL",
        ):
            refused = await query.call({"sql": statement}, ctx())
            assert (
                refused.is_error
                and "read-only" in refused.content
                and "table_info" in refused.content
            ), statement
        still = await query.call({"sql": "PRAGMA table_info(sales)"}, ctx())
        assert not still.is_error and still.content.splitlines()[1].split("\t")[:3] == [
            "0",
            "id",
            "INTEGER",
        ]
        listed = await query.call({"sql": "pragma main.table_list"}, ctx())
        assert not listed.is_error and "sales" in listed.content

        typo = await query.call({"sql": "SELEC region FROM sales"}, ctx())
        assert typo.is_error and "syntax error" in typo.content and 'near "SELEC"' in typo.content
        assert "read-only" not in typo.content
        cut = await query.call({"sql": "SELECT (1"}, ctx())
        assert cut.is_error and "syntax error" in cut.content
    finally:
        await ts.close()
    conn = sqlite3.connect(f"file:{sales_db}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal"
