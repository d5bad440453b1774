"""The TUI's transcript screen shows a run's feedback in its head line."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from agen.api import registry as r
from agen.tui.app import AgenApp
from agen.tui.screens.tasks import TasksScreen
from agen.tui.screens.transcript import TranscriptScreen
from agen.wire.feedback import RecordFeedbackRequest
from tests.observe_helpers import MULTI_TOOL_SCRIPT, embedded_hub
from tests.tui.helpers import until


async def test_the_transcript_head_shows_the_latest_feedback(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
        task = await e.run("scribe", "summarise")
        await e.client.call(
            r.RecordFeedback, RecordFeedbackRequest(id=task.id, score=0.25, note="too short")
        )
        await e.client.call(
            r.RecordFeedback,
            RecordFeedbackRequest(
                id=task.id, score=-1.0, note="wrong file", labels={"kind": "bug"}
            ),
        )
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("t")
            await until(
                pilot,
                lambda: isinstance(app.screen, TasksScreen) and bool(app.screen.tasks),
                "tasks",
            )
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript")
            head = app.screen.query_one("#transcript-head", Static)
            await until(pilot, lambda: "feedback" in str(head.render()), "the feedback line")
            assert "feedback -1.00 by local-admin [kind=bug]: wrong file (+1 more)" in str(
                head.render()
            )
