"""The Memory screen (blocks, versions, who wrote them) and a run's artifacts on the Transcript screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion
from textual.widgets import Static

from agen.api import registry as r
from agen.runner.memory import Author, set_block
from agen.tui import fmt
from agen.tui.app import AgenApp
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.memory import MemoryScreen
from agen.tui.screens.transcript import TranscriptScreen
from agen.tui.widgets.table import FastTable
from agen.wire.memory import RollbackMemoryRequest, SetMemoryRequest
from tests.observe_helpers import MULTI_TOOL_SCRIPT, Embedded, embedded_hub
from tests.tui.helpers import cells, until
from tests.tui.test_snapshots import SIZE, SIZES, settle, still


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "short_id", lambda value: "ID" if value else "-")
    monkeypatch.setattr(fmt, "age", lambda ms: "1m" if ms else "-")


async def remember(e: Embedded) -> None:
    """Two blocks: one a person set, changed and rolled back; one an agent's run appended to."""
    c = e.client
    await c.call(
        r.SetMemory,
        SetMemoryRequest(
            label="rules", value="be kind", title="House rules", description="how we behave"
        ),
    )
    await c.call(r.SetMemory, SetMemoryRequest(label="rules", value="be fast", expected_version=1))
    await c.call(
        r.RollbackMemory, RollbackMemoryRequest(label="rules", to_version=1, expected_version=2)
    )
    await e.node.store.write(
        lambda tx: set_block(
            tx,
            "default",
            "journal",
            "met the team",
            author=Author.run("01RUNAAAAAAAAAAAAAAAAAAAAA"),
        )
    )


def detail(app: AgenApp) -> str:
    return str(app.screen.query_one("#memory-detail", Static).render())


async def test_memory_screen_shows_blocks_versions_and_who_wrote_them(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await remember(e)
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
            await pilot.press("m")
            await until(pilot, lambda: isinstance(app.screen, MemoryScreen), "the memory screen")
            table = app.screen.query_one("#memory", FastTable)
            await until(pilot, lambda: table.row_count == 2, "both blocks")
            assert cells(table, 0) == ["journal", "rules"] and cells(table, 2) == ["1", "3"]
            assert cells(table, 5) == ["run ID", "local-admin"]
            await pilot.press("down")
            await until(
                pilot, lambda: "rules · version 3" in detail(app), "the rules block's detail"
            )
            assert "be kind" in detail(
                app
            ) and "v3 1m local-admin (rollback to version 1)" in detail(app)
            # a write elsewhere shows on refresh (memory writes are not events)
            await e.client.call(r.SetMemory, SetMemoryRequest(label="rules", value="be brave"))
            await pilot.press("ctrl+r")
            await until(pilot, lambda: cells(table, 2) == ["1", "4"], "the new version")
            await until(pilot, lambda: "be brave" in detail(app), "the new value")


@pytest.mark.parametrize("size", list(SIZES.values()), ids=list(SIZES))
async def test_memory_snapshot(
    tmp_path: Path, snapshot: SnapshotAssertion, size: tuple[int, int]
) -> None:
    async with embedded_hub(tmp_path) as e:
        await remember(e)
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
            await pilot.press("m")
            await until(
                pilot, lambda: "journal · version 1" in detail(app), "the first block's detail"
            )
            await settle(pilot, app)
            still(app)
            await pilot.pause()
            assert app.export_screenshot() == snapshot.use_extension(SVGImageExtension)


async def test_transcript_lists_the_artifacts_the_run_saved(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        await e.run("scribe", "summarise")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the first screen")
            await pilot.press("r")
            await until(
                pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript screen"
            )

            def head() -> str:
                return str(app.screen.query_one("#transcript-head", Static).render())

            await until(pilot, lambda: "artifacts:" in head(), "the run's artifacts")
            assert "artifacts: findings.md (16 B, sha256:" in head()
