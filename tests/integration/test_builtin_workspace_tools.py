"""The built-in workspace toolset (builtinTools.workspace) in real runs: a fake model scripts the
calls, the tools work on the run's workspace folder, and each call goes through the permission
rules, approvals and the effect ledger like an MCP tool's."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from agen.bundle import Bundle, load_bundle_files
from agen.runner.approvals import StoreApprovalGate, decide_approval
from agen.runner.loop import Runner
from agen.runner.policy import ApprovalGate
from agen.runner.tooling import build_tooling
from agen.runner.turn import TurnPolicy
from agen.runner.types import RunRequest, RunResult
from agen.store import SQLiteStore
from tests.runner_helpers import FnTool, Tools
from tests.unit.bundle_helpers import bundle_files

DEP = "hands"


@pytest.fixture
def ws_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "workspaces"
    monkeypatch.setenv("AGEN_WORKSPACE_ROOT", str(root))
    return root


def task_dir(root: Path, task: str) -> Path:
    return root / "default" / DEP / "tasks" / task


UNCONFINED = {"enabled": False}
"""The sandbox off: these tests read the host's pids of what a command started (test_sandbox.py
has the sandboxed ones)."""


def bundle(
    *turns: dict[str, Any],
    config: dict[str, Any] | None = None,
    sandbox: dict[str, Any] | None = None,
    **short: Any,
) -> Bundle:
    cfg = {"kind": "pool", "permissions": {"default": "allow"}, **(config or {})}
    cfg.setdefault("workspace", {"mode": "per_task", "retain": True})
    harness = {"provider": "fake", "parallelToolCalls": False, "fake": {"script": list(turns)}}
    if sandbox is not None:
        harness["sandbox"] = sandbox
    return load_bundle_files(bundle_files(harness=harness, config=cfg, **short))


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"toolCalls": [{"name": n, "arguments": a} for n, a in pairs]}


def runner(
    store: SQLiteStore,
    b: Bundle,
    *,
    gate: ApprovalGate | None = None,
    owner: str = "test",
    extra: Any = None,
) -> Runner:
    t = build_tooling(b, store, deployment=DEP)
    return Runner(
        store,
        b,
        owner=owner,
        toolsets=[*t.toolsets, *([Tools(extra)] if extra else [])],
        policy=t.policy,
        redactor=t.redactor,
        extras=t.extras,
        gate=gate,
        turn_policy=TurnPolicy(max_retries=0, backoff_base_s=0.001),
    )


async def tool_messages(store: SQLiteStore, run_id: str) -> list[dict[str, Any]]:
    return await store.all(
        "SELECT name, content, is_error FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY seq",
        (run_id,),
    )


async def one_run(
    tmp_path: Path, b: Bundle, task: str = "t-1", **kw: Any
) -> tuple[RunResult, list[dict[str, Any]]]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    r = runner(store, b, **kw)
    try:
        res = await r.run(RunRequest(input="go", deployment=DEP, task_id=task))
        return res, await tool_messages(store, res.run_id)
    finally:
        await r.close()
        await store.close()


async def test_each_file_tool_works_on_the_runs_workspace(tmp_path: Path, ws_root: Path) -> None:
    b = bundle(
        calls(("workspace_write", {"path": "src/app.py", "content": "a = 1\nb = 2\nc = 3\n"})),
        calls(("workspace_read", {"path": "src/app.py", "offset": 2, "limit": 1})),
        calls(
            (
                "workspace_edit",
                {"path": "src/app.py", "old_string": "b = 2", "new_string": "b = 20"},
            )
        ),
        calls(("workspace_glob", {"pattern": "**/*.py"})),
        calls(("workspace_grep", {"pattern": r"^b = \d+$", "include": "*.py"})),
        {"text": "done"},
    )
    res, msgs = await one_run(tmp_path, b)
    assert res.status == "succeeded", res.outcome
    assert [(m["name"], m["is_error"]) for m in msgs] == [
        ("workspace_write", 0),
        ("workspace_read", 0),
        ("workspace_edit", 0),
        ("workspace_glob", 0),
        ("workspace_grep", 0),
    ]
    assert msgs[0]["content"] == "wrote 18 bytes to src/app.py"
    assert msgs[1]["content"] == "     2\tb = 2\n[lines 2-2 of 3; read on with offset=3]"
    assert msgs[3]["content"] == "src/app.py"
    assert msgs[4]["content"] == "src/app.py:2:b = 20"
    assert (task_dir(ws_root, "t-1") / "src" / "app.py").read_text() == "a = 1\nb = 20\nc = 3\n"


async def test_edit_refuses_an_ambiguous_or_missing_match_and_changes_nothing(
    tmp_path: Path, ws_root: Path
) -> None:
    b = bundle(
        calls(("workspace_write", {"path": "n.txt", "content": "x = 1\nx = 1\n"})),
        calls(("workspace_edit", {"path": "n.txt", "old_string": "x = 1", "new_string": "y"})),
        calls(("workspace_edit", {"path": "n.txt", "old_string": "z = 9", "new_string": "y"})),
        calls(
            (
                "workspace_edit",
                {
                    "path": "n.txt",
                    "old_string": "x = 1",
                    "new_string": "x = 2",
                    "replace_all": True,
                },
            )
        ),
        {"text": "done"},
    )
    res, msgs = await one_run(tmp_path, b)
    assert res.status == "succeeded"
    ambiguous, missing, every = msgs[1], msgs[2], msgs[3]
    assert ambiguous["is_error"] == 1 and ambiguous["content"] == (
        "old_string occurs 2 times in n.txt; nothing was changed. Include more surrounding text "
        "so it is unique, or set replace_all to replace every one"
    )
    assert missing["is_error"] == 1 and "old_string was not found in n.txt" in missing["content"]
    assert every == {
        "name": "workspace_edit",
        "content": "edited n.txt (2 replacements)",
        "is_error": 0,
    }
    assert (task_dir(ws_root, "t-1") / "n.txt").read_text() == "x = 2\nx = 2\n"


async def test_grep_output_is_bounded_with_a_count_of_what_was_left_out(
    tmp_path: Path, ws_root: Path
) -> None:
    lines = "".join(f"hit {i}\nmiss {i}\n" for i in range(30))
    b = bundle(
        calls(("workspace_write", {"path": "log.txt", "content": lines})),
        calls(("workspace_write", {"path": "other.md", "content": "hit 99\n"})),
        calls(("workspace_grep", {"pattern": "^hit", "include": "*.txt", "limit": 10})),
        {"text": "done"},
    )
    _, msgs = await one_run(tmp_path, b)
    out = msgs[2]["content"].splitlines()
    assert out[:10] == [f"log.txt:{2 * i + 1}:hit {i}" for i in range(10)]
    assert out[10:] == ["… 20 more matches not shown; narrow the pattern or path"]


async def test_run_returns_output_and_exit_code_and_its_output_is_bounded(
    tmp_path: Path, ws_root: Path
) -> None:
    b = bundle(
        calls(("workspace_run", {"command": "pwd; echo oops >&2; exit 3"})),
        calls(("workspace_run", {"command": "yes 0123456789 | head -c 200000"})),
        {"text": "done"},
        config={"permissions": {"default": "allow"}},
    )
    _, msgs = await one_run(tmp_path, b)
    here = real(task_dir(ws_root, "t-1"))
    assert msgs[0]["content"] == f"{here}\noops\n[exit code 3]"
    big = msgs[1]["content"]
    assert "[output truncated: 170000 characters left out of the middle]" in big
    assert big.endswith("[exit code 0]") and len(big) < 31_000


async def test_run_at_its_timeout_is_killed_with_every_process_it_started(
    tmp_path: Path, ws_root: Path
) -> None:
    b = bundle(
        calls(
            (
                "workspace_run",
                {"command": "sleep 300 & echo $! > bg.pid; sleep 300", "timeout_seconds": 0.5},
            )
        ),
        {"text": "done"},
        sandbox=UNCONFINED,
    )
    _, msgs = await one_run(tmp_path, b)
    assert msgs[0]["content"].startswith("[timed out after 0.5s: the command and every process")
    pid = int((task_dir(ws_root, "t-1") / "bg.pid").read_text())
    await gone(pid)


def real(path: Path) -> str:
    return os.path.realpath(path)


def runs(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def gone(pid: int) -> None:
    """Wait until ``pid`` no longer runs; fails after 10 s."""
    for _ in range(200):
        if not runs(pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still runs")


async def test_a_background_process_left_by_run_is_stopped_when_the_run_ends(
    tmp_path: Path, ws_root: Path
) -> None:
    b = bundle(
        calls(("workspace_run", {"command": "setsid sleep 300 > /dev/null 2>&1 & echo $!"})),
        {"text": "done"},
        sandbox=UNCONFINED,
    )
    _, msgs = await one_run(tmp_path, b)
    await gone(int(msgs[0]["content"].splitlines()[0]))


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../escape.txt", "it climbs out with '..'"),
        ("/etc/passwd", "it is an absolute path"),
        ("out/secret.txt", "a symlink on the way leads out"),
    ],
)
async def test_a_path_outside_the_workspace_is_refused(
    tmp_path: Path, ws_root: Path, path: str, why: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    task_dir(ws_root, "t-1").mkdir(parents=True)
    (task_dir(ws_root, "t-1") / "out").symlink_to(outside)
    b = bundle(
        calls(("workspace_read", {"path": path})),
        calls(("workspace_write", {"path": path, "content": "pwned"})),
        {"text": "done"},
    )
    _, msgs = await one_run(tmp_path, b)
    for m in msgs:
        assert m["is_error"] == 1, m
        assert "is outside the workspace root" in m["content"] and why in m["content"], m
    assert (outside / "secret.txt").read_text() == "do not read"
    assert not (task_dir(ws_root, "t-1").parent / "escape.txt").exists()


async def test_ask_on_workspace_run_creates_an_approval_and_runs_once_approved(
    tmp_path: Path, ws_root: Path
) -> None:
    b = bundle(
        calls(("workspace_run", {"command": "touch ran.txt"})),
        {"text": "done"},
        config={"permissions": {"default": "allow", "ask": ["workspace.run"]}},
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    r = runner(store, b, gate=StoreApprovalGate(store))
    try:
        res = await r.run(RunRequest(input="go", deployment=DEP, task_id="t-1"))
        assert res.suspended is not None
        rows = await store.all("SELECT tool, state, arguments FROM approvals")
        assert [(x["tool"], x["state"]) for x in rows] == [("workspace.run", "pending")]
        assert "touch ran.txt" in rows[0]["arguments"]
        assert not (task_dir(ws_root, "t-1") / "ran.txt").exists()

        approval = str(await store.scalar("SELECT id FROM approvals"))
        await store.write(lambda tx: decide_approval(tx, approval, True, "bob"))
        res = await r.run(RunRequest(input="go", deployment=DEP, task_id="t-1"))
        assert res.status == "succeeded" and res.outcome.summary == "done"
        assert (task_dir(ws_root, "t-1") / "ran.txt").exists()  # approved: it ran
    finally:
        await r.close()
        await store.close()


async def test_a_deny_rule_on_the_builtin_names_hides_the_tool(
    tmp_path: Path, ws_root: Path
) -> None:
    """A denied tool is not offered to the model at all, as for an MCP server's tools."""
    b = bundle(
        calls(("workspace_write", {"path": "a.txt", "content": "x"})),
        {"text": "done"},
        config={"permissions": {"default": "allow", "deny": ["workspace.write"]}},
    )
    _, msgs = await one_run(tmp_path, b)
    assert msgs[0]["is_error"] == 1
    assert msgs[0]["content"].startswith("unknown tool 'workspace_write'; the tools you can call")
    assert "workspace_read" in msgs[0]["content"]
    assert not (task_dir(ws_root, "t-1") / "a.txt").exists()


async def test_a_completed_write_is_not_repeated_when_the_run_resumes(
    tmp_path: Path, ws_root: Path
) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def hold(args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "held"

    b = bundle(
        calls(
            ("workspace_write", {"path": "note.txt", "content": "from the model"}),
            ("hold", {}),
        ),
        {"text": "done"},
    )
    store = await SQLiteStore.open(tmp_path / "agen.db")
    old = runner(store, b, owner="host-a", extra=FnTool("hold", hold, side_effect=True))
    first = asyncio.create_task(old.run(RunRequest(input="go", deployment=DEP, task_id="t-1")))
    await started.wait()
    note = task_dir(ws_root, "t-1") / "note.txt"
    assert note.read_text() == "from the model"
    note.write_text("changed by hand since")  # a repeated write would put the model's text back

    new = runner(store, b, owner="host-b", extra=FnTool("hold", hold, side_effect=True))
    try:
        res = await new.run(RunRequest(input="go", deployment=DEP, task_id="t-1", attempt=2))
        assert res.resumed and res.outcome.summary == "done"
        assert note.read_text() == "changed by hand since"
        msgs = await tool_messages(store, res.run_id)
        assert msgs[0] == {
            "name": "workspace_write",
            "content": "wrote 14 bytes to note.txt",
            "is_error": 0,
        }
        effects = await store.all("SELECT tool, state FROM effects WHERE run_id = ?", (res.run_id,))
        assert {"tool": "workspace.write", "state": "completed"} in effects
    finally:
        release.set()
        with contextlib.suppress(Exception):
            await first
        await old.close()
        await new.close()
        await store.close()


async def test_a_secret_in_a_tool_result_is_redacted(
    tmp_path: Path, ws_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_TEST_TOKEN", "tok-5f1e-do-not-leak")
    b = bundle(
        calls(("workspace_write", {"path": "env.txt", "content": "TOKEN=tok-5f1e-do-not-leak\n"})),
        calls(("workspace_read", {"path": "env.txt"})),
        {"text": "done"},
        secrets={"secrets": {"TOKEN": {"source": "env", "env": "AGEN_TEST_TOKEN"}}},
    )
    _, msgs = await one_run(tmp_path, b)
    assert msgs[1]["content"] == "     1\tTOKEN=[REDACTED]"


async def test_no_builtins_when_a_workspace_server_is_configured_or_they_are_off(
    tmp_path: Path, ws_root: Path
) -> None:
    off = bundle(
        calls(("workspace_read", {"path": "x"})),
        {"text": "done"},
        config={"builtinTools": {"workspace": False}},
    )
    _, msgs = await one_run(tmp_path, off)
    assert msgs[0]["is_error"] == 1 and msgs[0]["content"].startswith(
        "unknown tool 'workspace_read'"
    )

    no_run = bundle(
        calls(("workspace_run", {"command": "true"})),
        {"text": "done"},
        config={"builtinTools": {"workspace": {"run": False}}},
    )
    _, msgs = await one_run(tmp_path, no_run, task="t-2")
    assert msgs[0]["content"].startswith("unknown tool 'workspace_run'")
    assert "workspace_read" in msgs[0]["content"]
