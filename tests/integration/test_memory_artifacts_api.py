"""Memory blocks people can see, set (compare-and-set), trace and roll back; artifacts agents saved."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.errors import ConflictError, DeniedError, NotFoundError
from agen.hub.auth import Principal
from agen.wire.memory import (
    GetArtifactRequest,
    GetMemoryRequest,
    ListArtifactsRequest,
    ListMemoryRequest,
    MemoryHistoryRequest,
    RollbackMemoryRequest,
    SetMemoryRequest,
)
from tests.observe_helpers import embedded_hub

# The agent saves an artifact and writes its memory block, then answers.
SAVE_AND_REMEMBER: list[dict[str, Any]] = [
    {
        "toolCalls": [
            {
                "name": "save_artifact",
                "arguments": {"name": "report.md", "content": "# Report\nall good\n"},
            },
            {
                "name": "memory_update",
                "arguments": {"block": "notes", "operation": "append", "value": "agent was here"},
            },
        ]
    },
    {"text": "saved the report"},
]
CONFIG = {
    "kind": "pool",
    "scale": {"min": 1, "max": 1},
    "memory": [{"block": "notes", "mode": "write"}],
    "permissions": {"default": "allow"},
}


async def test_artifacts_ls_and_get_round_trip_from_a_run_that_saved_one(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=SAVE_AND_REMEMBER, config=CONFIG)
        task = await e.run("scribe", "write the report")
        assert task.state == "succeeded"
        c = e.client

        [art] = (await c.call(r.ListArtifacts, ListArtifactsRequest(task_id=task.id))).artifacts
        assert (art.name, art.size, art.task_id, art.namespace) == (
            "report.md",
            18,
            task.id,
            "default",
        )
        assert [
            a.id for a in (await c.call(r.ListArtifacts, ListArtifactsRequest())).artifacts
        ] == [art.id]
        got = await c.call(r.GetArtifact, GetArtifactRequest(id=art.id))
        assert (
            got.content == "# Report\nall good\n"
            and got.next_offset is None
            and got.total_chars == 18
        )
        # a unique prefix is enough, and pages carry on where the last one stopped
        page = await c.call(
            r.GetArtifact, GetArtifactRequest(id=art.id.removeprefix("sha256:")[:12], length=9)
        )
        assert (page.content, page.next_offset) == ("# Report\n", 9)
        rest = await c.call(r.GetArtifact, GetArtifactRequest(id=art.id, offset=9))
        assert page.content + rest.content == got.content
        with pytest.raises(NotFoundError, match="no artifact sha256:nope"):
            await c.call(r.GetArtifact, GetArtifactRequest(id="sha256:nope"))
        # the memory write the agent made is a version authored by its run
        hist = await c.call(r.MemoryHistory, MemoryHistoryRequest(label="notes"))
        assert [(v.version, v.value, v.author_kind) for v in hist.versions] == [
            (1, "agent was here", "run")
        ]
        runs = await e.node.store.all("SELECT id FROM runs WHERE task_id = ?", (task.id,))
        assert hist.versions[0].author == runs[0]["id"]


async def test_memory_rollback_restores_an_earlier_version_and_keeps_history(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        c = e.client
        one = (
            await c.call(
                r.SetMemory,
                SetMemoryRequest(
                    label="rules",
                    value="be kind",
                    title="House rules",
                    description="how we behave",
                    expected_version=0,
                ),
            )
        ).block
        assert (one.version, one.author_kind, one.author) == (1, "person", "local-admin")
        await c.call(
            r.SetMemory, SetMemoryRequest(label="rules", value="be fast", expected_version=1)
        )
        back = (
            await c.call(
                r.RollbackMemory,
                RollbackMemoryRequest(label="rules", to_version=1, expected_version=2),
            )
        ).block
        assert (back.version, back.value, back.title) == (3, "be kind", "House rules")
        cur = (await c.call(r.GetMemory, GetMemoryRequest(label="rules"))).block
        assert (cur.version, cur.value) == (3, "be kind")
        assert (
            await c.call(r.GetMemory, GetMemoryRequest(label="rules", version=2))
        ).block.value == "be fast"
        hist = await c.call(r.MemoryHistory, MemoryHistoryRequest(label="rules"))
        assert hist.current_version == 3
        assert [(v.version, v.value, v.note) for v in hist.versions] == [
            (3, "be kind", "rollback to version 1"),
            (2, "be fast", None),
            (1, "be kind", None),
        ]
        [summary] = (await c.call(r.ListMemory, ListMemoryRequest())).blocks
        assert (summary.label, summary.version, summary.chars, summary.author) == (
            "rules",
            3,
            7,
            "local-admin",
        )
        with pytest.raises(ConflictError, match="at version 3, not 2"):
            await c.call(
                r.RollbackMemory,
                RollbackMemoryRequest(label="rules", to_version=2, expected_version=2),
            )
        with pytest.raises(NotFoundError, match="has no version 9"):
            await c.call(r.RollbackMemory, RollbackMemoryRequest(label="rules", to_version=9))


async def test_two_writers_with_the_same_expected_version_the_second_gets_409_naming_the_current(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e:
        c = e.client
        await c.call(r.SetMemory, SetMemoryRequest(label="plan", value="v1"))
        results = await asyncio.gather(
            c.call(
                r.SetMemory, SetMemoryRequest(label="plan", value="from alice", expected_version=1)
            ),
            c.call(
                r.SetMemory, SetMemoryRequest(label="plan", value="from bob", expected_version=1)
            ),
            return_exceptions=True,
        )
        wins = [x for x in results if not isinstance(x, BaseException)]
        losses = [x for x in results if isinstance(x, BaseException)]
        assert len(wins) == 1 and len(losses) == 1
        assert isinstance(losses[0], ConflictError) and losses[0].http_status == 409
        assert "memory block plan is at version 2, not 1" in str(losses[0])
        assert "(expected version 2)" in str(losses[0])
        cur = (await c.call(r.GetMemory, GetMemoryRequest(label="plan"))).block
        assert cur.version == 2 and cur.value == wins[0].block.value


async def test_memory_and_artifacts_are_held_to_the_callers_namespaces(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.client.call(r.SetMemory, SetMemoryRequest(label="secret", value="x"))
        other = Client.in_process(
            e.node.hub,
            Principal(
                id="t", name="t", scopes=frozenset({"admin"}), namespaces=frozenset({"other"})
            ),
        )
        with pytest.raises(DeniedError, match="outside them"):
            await other.call(r.GetMemory, GetMemoryRequest(label="secret"))
        with pytest.raises(DeniedError):
            await other.call(r.ListArtifacts, ListArtifactsRequest())
        viewer = Client.in_process(
            e.node.hub, Principal(id="v", name="v", scopes=frozenset({"viewer"}))
        )
        assert (await viewer.call(r.ListMemory, ListMemoryRequest())).blocks
        with pytest.raises(DeniedError):
            await viewer.call(r.SetMemory, SetMemoryRequest(label="secret", value="y"))


async def test_blocks_written_before_history_was_kept_get_their_current_value_as_a_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agen.store import SQLiteStore, migrate

    shipped = migrate.known_migrations
    every = shipped()
    before = every[
        : [m.name for m in every].index("memory_versions")
    ]  # a store made before history was kept
    monkeypatch.setattr(migrate, "known_migrations", lambda dialect="sqlite": before)
    old = await SQLiteStore.open(tmp_path / "hub.db")
    await old.write(
        lambda tx: tx.execute(
            "INSERT INTO memory_blocks (namespace, id, label, value, limit_chars, version, updated_ms)"
            " VALUES ('default', 'B1', 'facts', 'sky is blue', 5000, 4, 1000)"
        )
    )
    await old.close()
    monkeypatch.setattr(migrate, "known_migrations", shipped)
    async with embedded_hub(tmp_path) as e:
        hist = await e.client.call(r.MemoryHistory, MemoryHistoryRequest(label="facts"))
        assert [(v.version, v.value, v.author_kind) for v in hist.versions] == [
            (4, "sky is blue", "unknown")
        ]
        back = await e.client.call(
            r.RollbackMemory, RollbackMemoryRequest(label="facts", to_version=4)
        )
        assert (back.block.version, back.block.value) == (5, "sky is blue")
