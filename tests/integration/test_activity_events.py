"""The leader records GetActivity warnings as events, each occurrence once (seed 000 §11)."""

from __future__ import annotations

import json
from pathlib import Path

from agen.api import registry as r
from agen.client import Client
from agen.hub.leader import warning_events
from agen.hub.leader.loop import LeaderLoop
from agen.hub.service import Hub
from agen.store import SQLiteStore, now_ms
from agen.wire.deployments import CreateDeploymentRequest
from agen.wire.observe import ActivityWarning
from agen.wire.tasks import SubmitTaskRequest
from tests.fleet_helpers import files_b64, write_bundle

MIN = 60_000


async def test_a_waiting_queue_becomes_one_activity_event_per_hour_however_often_the_leader_ticks(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    clock = [now_ms()]
    hub = Hub(store, clock=lambda: clock[0])
    loop = LeaderLoop(hub)
    try:
        client = Client.in_process(hub)  # a Hub with no Nest: the task waits in the queue
        bundle = write_bundle(
            tmp_path / "b", "slowpoke", config={"kind": "pool", "scale": {"min": 0, "max": 1}}
        )
        await client.call(r.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
        await client.call(r.SubmitTask, SubmitTaskRequest(deployment="slowpoke", input="hello"))
        # Start the clock (and the task's queue time) at the top of an hour: the warning is keyed per clock hour,
        # so the ticks below must not straddle an hour boundary whatever the wall-clock time of the run.
        clock[0] = clock[0] // (60 * MIN) * (60 * MIN)
        await store.write(lambda tx: tx.execute("UPDATE tasks SET created_ms = ?", (clock[0],)))

        async def queue_events() -> list[dict[str, object]]:
            return await store.all(
                "SELECT * FROM events WHERE type = 'activity.queue_waiting' ORDER BY seq"
            )

        await loop.step()
        assert await queue_events() == []  # waited less than 5 minutes: no warning yet
        clock[0] += 6 * MIN
        await loop.step()
        for _ in range(3):  # later ticks, 30 s apart, within the same hour
            clock[0] += warning_events.EVERY_MS
            await loop.step()
        [event] = await queue_events()
        assert event["deployment"] == "slowpoke" and event["severity"] == "warning"
        data = json.loads(str(event["data"]))
        assert data["due"] == 1 and "oldest has waited" in data["message"]
        clock[0] += 60 * MIN  # still waiting an hour later: announced again
        await loop.step()
        assert len(await queue_events()) == 2
    finally:
        await loop.stop()
        await store.close()


def test_run_warnings_are_keyed_once_per_run_or_per_episode() -> None:
    now = now_ms()
    near = ActivityWarning(
        kind="near_turn_limit",
        severity="warning",
        namespace="default",
        deployment="d",
        run_id="r1",
        message="8 of 10 turns used",
    )
    assert warning_events.dedupe_key(near, now) == warning_events.dedupe_key(
        near, now + 5 * 3_600_000
    )
    quiet = ActivityWarning(
        kind="quiet_run",
        severity="warning",
        namespace="default",
        deployment="d",
        run_id="r1",
        since_ms=now - 6 * MIN,
        message="no step for 6 min (model)",
    )
    again = quiet.model_copy(
        update={"since_ms": now + MIN}
    )  # the run stepped, then went quiet again
    assert warning_events.dedupe_key(quiet, now) == warning_events.dedupe_key(
        quiet, now + 2 * 3_600_000
    )
    assert warning_events.dedupe_key(quiet, now) != warning_events.dedupe_key(again, now)
