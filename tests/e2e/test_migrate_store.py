"""Done-when of `agen migrate` (#18): a store a real `agen up` built is moved to another store while killed
once midway, and `agen up` on the copy carries on where the original left off."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agen.store.copy import open_side
from agen.store.locate import locate
from tests.e2e.harness import AGEN, Up, wait_until
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")


def gated(root: Path, effects: Path) -> Path:
    """One asked call of a side-effecting tool, then an answer: a run that waits for an approval."""
    bundle = write_bundle(
        root,
        "gated",
        script=[
            {"toolCalls": [{"name": "t_append_task", "arguments": {"path": str(effects)}}]},
            {"text": "done"},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 1, "max": 1},
            "permissions": {"ask": ["t.append_task"], "default": "allow"},
        },
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def migrate(
    up: Up, *args: str, pause_after: tuple[int, Path] | None = None
) -> subprocess.Popen[str]:
    """`agen migrate ARGS`; with ``pause_after`` (N, MARKER) it stops for good after its N-th committed
    batch, once it has written MARKER (tests/e2e/migrate_paused.py)."""
    command = [AGEN]
    if pause_after is not None:
        n, marker = pause_after
        command = [
            sys.executable,
            str(Path(__file__).with_name("migrate_paused.py")),
            str(n),
            str(marker),
        ]
    return subprocess.Popen(
        [*command, "migrate", *args],
        env=up.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def target_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'moved' / 'agen.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.mark.slow
@pytest.mark.parametrize("target", ["sqlite", "postgres"])
def test_a_store_migrated_while_killed_midway_carries_on_under_agen_up(
    target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    effects = tmp_path / "effects.log"
    to = target_url(target, tmp_path, request)
    up = Up(tmp_path / "home").start()
    try:
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        cron = [
            {
                "name": "tick",
                "type": "cron",
                "schedule": "* * * * *",
                "input": "tick",
                "catch_up": True,
            }
        ]
        up.agen(
            "deploy",
            str(
                write_bundle(
                    tmp_path / "ticker", "ticker", config={"kind": "pool", "triggers": cron}
                )
            ),
        )
        up.agen("deploy", str(gated(tmp_path / "gated", effects)))
        finished = [
            up.json("run", "echo", "hello there", "--conversation", "chat")["id"],
            up.json("run", "echo", "a one-off")["id"],
        ]
        # A task waiting for its approval holds up the later tasks of its conversation: they stay queued.
        gated_task = up.agen(
            "run", "gated", "do it", "--conversation", "line", "--no-wait"
        ).stdout.strip()
        wait_until(lambda: up.json("approvals")["approvals"], what="a pending approval")
        queued = [
            up.agen(
                "run", "gated", f"job {i}", "--conversation", "line", "--no-wait"
            ).stdout.strip()
            for i in range(2)
        ]
        approval = wait_until(lambda: up.json("approvals")["approvals"], what="a pending approval")[
            0
        ]
        before = {
            t: (up.agen("transcript", t).stdout, up.agen("trace", t).stdout) for t in finished
        }

        refused = migrate(up, "--to", to)
        _, err = refused.communicate(timeout=60)
        assert refused.returncode == 5 and "--drain" in err, err

        marker = tmp_path / "paused"
        first = migrate(up, "--to", to, "--drain", pause_after=(5, marker))
        wait_until(marker.exists, 120, "the first copy to commit five batches")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert up.proc is not None and up.proc.wait(60) == 0  # --drain stopped it before copying
    finally:
        up.stop()

    again = migrate(up, "--to", to, "--json")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    report = json.loads(out)
    assert report["ok"] and all(t["ok"] for t in report["tables"])
    tasks_row = next(t for t in report["tables"] if t["table"] == "tasks")
    assert tasks_row["target_rows"] == tasks_row["source_rows"] >= 5  # nothing doubled by the rerun

    # The cron's last fire was copied; move it a few minutes back so the catch-up fires now rather than
    # at the next wall-clock minute (no waiting on time in tests).
    side = open_side(locate(to), write=True)
    assert side is not None
    p = "?" if target == "sqlite" else "%s"
    past = int(time.time() * 1000) - 5 * 60_000
    side.rows(
        f"UPDATE triggers SET last_due_ms = {p}, active_since_ms = {p} WHERE name = 'tick' RETURNING id",
        (past, past - 60_000),
    )
    side.close()

    up2 = Up(tmp_path / "home").start()
    try:
        assert [up2.json("wait", t, "--timeout", "1ms")["state"] for t in queued] == ["queued"] * 2
        assert up2.json("approve", approval["id"])["approval"]["state"] == "approved"
        assert up2.agen("wait", gated_task).stdout.strip() == "done"
        for t in queued:  # each queued task now runs, and asks for its own approval in turn
            asked = wait_until(lambda: up2.json("approvals")["approvals"], what="the next approval")
            assert asked[0]["task_id"] == t
            up2.json("approve", asked[0]["id"])
            assert up2.agen("wait", t).stdout.strip() == "done"
        assert effects.read_text().split() == [gated_task, *queued]
        wait_until(lambda: up2.json("tasks", "ticker")["tasks"], 60, "the cron to fire")
        more = up2.json("run", "echo", "and again", "--conversation", "chat")["id"]
        after = {
            t: (up2.agen("transcript", t).stdout, up2.agen("trace", t).stdout) for t in finished
        }
        assert after == before
    finally:
        up2.stop()
    side = open_side(locate(to), write=False)
    assert side is not None
    try:  # the new task continued the conversation the old one started (one conversation, both turns in it)
        convs = side.rows(
            f"SELECT DISTINCT conversation_id FROM runs WHERE task_id IN ({p}, {p})",
            (finished[0], more),
        )
        assert len(convs) == 1 and convs[0][0] is not None
        texts = [
            r[0]
            for r in side.rows(
                f"SELECT content FROM messages WHERE conversation_id = {p}", convs[0]
            )
        ]
        assert any("hello there" in str(t) for t in texts) and any(
            "and again" in str(t) for t in texts
        )
    finally:
        side.close()
