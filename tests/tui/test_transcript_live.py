"""The transcript of a running run shows the model's answer as it streams: the stub holds the rest
of its answer after the first words, and the screen shows those words before the stub sends more;
once the turn is checkpointed it is in the conversation and the live text is gone."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from textual.widgets import Static, Tree

from agen.api import registry as r
from agen.testing.openai_server import OpenAIServer, Reply
from agen.tui.app import AgenApp
from agen.tui.screens.transcript import TranscriptScreen
from agen.wire.deployments import CreateDeploymentRequest
from tests.fleet_helpers import files_b64, write_bundle
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import until

ANSWER = "First words, and then all the rest."


async def test_the_transcript_shows_the_answer_of_a_running_turn_as_it_streams(
    tmp_path: Path,
) -> None:
    hold = threading.Event()
    async with OpenAIServer() as stub, embedded_hub(tmp_path) as e:
        stub.script(Reply(text=ANSWER, hold=hold))
        bundle = write_bundle(tmp_path / "writer", "writer")
        harness = {"provider": "openai", "model": "m", "baseUrl": stub.base_url}
        (bundle / "x-agen" / "harness.json").write_text(json.dumps(harness))
        await e.client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        task = await e.submit("writer", "write")
        app = AgenApp(e.client, hub_label="test", watch=False)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await until(pilot, lambda: bool(stub.requests), "the model call")
                await pilot.press("r")
                await until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "transcript")
                live = app.screen.query_one("#transcript-live", Static)
                await until(pilot, lambda: "First " in str(live.render()), "the streamed words")
                assert not hold.is_set() and live.display
                hold.set()
                tree = app.screen.query_one(Tree)
                await until(
                    pilot,
                    lambda: any(
                        ANSWER in str(n.children[0].label) for n in tree.root.children[1:2]
                    ),
                    "the answer in the conversation",
                )
                await until(pilot, lambda: not live.display, "the live text gone")
        finally:
            hold.set()
        await e.wait(task.id)
