"""Event triggers in a real Store with an injected clock: cursor, filters, count, chain, coalesce, holds."""

from __future__ import annotations

from typing import Any

from agen.bundle.config import Config
from agen.domain import DeploymentRow
from agen.hub.leader.fleet_tick import fleet_tick
from agen.hub.leadership import HUB_LEADER, acquire_or_renew
from agen.hub.queue import providers
from agen.hub.triggers.events import fire_event_triggers
from agen.hub.triggers.fire import TickReport
from agen.hub.triggers.tick import sync_triggers
from agen.store import Row, Store, Tx, new_ulid
from tests.unit.trigger_helpers import deployment

T0 = 1_750_000_000_000
ACCT = "default/openai:OPENAI_API_KEY"


async def watcher(store: Store, on: dict[str, Any], **extra: Any) -> DeploymentRow:
    dep = await deployment(store, "watcher")
    config = Config.model_validate(
        {
            "triggers": [
                {"name": "react", "type": "event", "on": on, "input": "look at this", **extra}
            ]
        }
    )
    await store.write(lambda tx: sync_triggers(tx, dep, config))
    return dep


def emit(
    tx: Tx,
    type: str,
    *,
    task_id: str | None = None,
    labels: dict[str, str] | None = None,
    at: int = T0,
) -> int:
    tx.now_ms = at
    seq = tx.event(
        "default", type, deployment="other", task_id=task_id, labels=labels, data={"n": 1}
    )
    # Postgres appends an event with its commit (seq None), or earlier when the transaction reads events
    return seq if seq is not None else int(tx.scalar("SELECT MAX(seq) FROM events"))


async def tick(store: Store, at: int) -> TickReport:
    return await store.write(lambda tx: fire_event_triggers(tx, now_ms=at))


async def fired_tasks(store: Store) -> list[Row]:
    return await store.all(
        "SELECT id, source, idempotency_key, event_chain, input, state FROM tasks WHERE source = 'event:react'"
        " ORDER BY seq"
    )


def other_task(tx: Tx, *, chain: int = 0, source: str = "api") -> str:
    """A task of another deployment (what an event's task_id points at)."""
    tid = new_ulid()
    seq = int(  # Postgres: from the sequence its task INSERTs use (migration 0025)
        tx.scalar(
            "SELECT nextval('tasks_seq_seq')"
            if tx.dialect == "postgres"
            else "SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks"
        )
    )
    tx.execute(
        "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, source, event_chain,"
        " root_task_id, seq, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            tid,
            "default",
            "dep-other",
            "other",
            "failed",
            "x",
            source,
            chain,
            tid,
            seq,
            tx.now_ms,
            tx.now_ms,
        ),
    )
    return tid


async def test_event_trigger_starts_at_the_newest_event_and_fires_once_per_match_keyed_by_seq(
    store: Store,
) -> None:
    await store.write(lambda tx: emit(tx, "task.failed"))  # before the trigger existed: never fires
    await watcher(store, {"type": ["task.", "deployment.updated"], "labels": {"team": "ops"}})
    seqs = await store.write(
        lambda tx: [
            emit(tx, "task.failed", labels={"team": "ops"}),  # prefix "task." matches
            emit(tx, "task.failed", labels={"team": "research"}),  # wrong label
            emit(tx, "approval.requested", labels={"team": "ops"}),  # wrong type
            emit(tx, "deployment.updated", labels={"team": "ops"}),  # exact type
        ]
    )
    report = await tick(store, T0 + 1000)
    tasks = await fired_tasks(store)
    assert len(report.fired) == 2
    assert [t["idempotency_key"] for t in tasks] == [
        f"event:react:{seqs[0]}",
        f"event:react:{seqs[3]}",
    ]
    assert tasks[0]["input"].startswith("look at this\n\n[event] ")
    assert '"type":"task.failed"' in tasks[0]["input"].replace(" ", "")
    assert [t["event_chain"] for t in tasks] == [1, 1]
    assert (await tick(store, T0 + 2000)).fired == []  # the cursor moved: nothing repeats
    statuses = await store.all(
        "SELECT status, task_id FROM trigger_events WHERE trigger_name = 'react'"
    )
    assert sorted(r["task_id"] for r in statuses) == sorted(t["id"] for t in tasks)


async def test_a_trigger_ignores_the_events_of_its_own_tasks(store: Store) -> None:
    await watcher(store, {"type": ["task."]})
    await store.write(lambda tx: emit(tx, "task.failed"))
    first = await tick(store, T0 + 1000)
    assert len(first.fired) == 1
    # Its own task's task.queued event (and any later ones) must not fire it again.
    own = first.fired[0]
    await store.write(lambda tx: emit(tx, "task.succeeded", task_id=own))
    assert (await tick(store, T0 + 2000)).fired == []
    assert len(await fired_tasks(store)) == 1


async def test_on_count_fires_only_when_enough_matches_arrive_within_the_window(
    store: Store,
) -> None:
    await watcher(store, {"type": ["task.failed"], "count": 3, "within": "10m"})
    minute = 60_000
    await store.write(
        lambda tx: [emit(tx, "task.failed", at=T0), emit(tx, "task.failed", at=T0 + 11 * minute)]
    )
    assert (
        await tick(store, T0 + 11 * minute)
    ).fired == []  # two, and the first fell out of the window
    pending = await store.scalar("SELECT pending FROM trigger_cursors")
    assert pending.count("[") == 2  # only the second is still held: [[seq, ms, chain]]
    await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 12 * minute))
    assert (await tick(store, T0 + 12 * minute)).fired == []
    third = await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 13 * minute))
    report = await tick(store, T0 + 13 * minute)
    assert len(report.fired) == 1
    tasks = await fired_tasks(store)
    assert tasks[0]["idempotency_key"] == f"event:react:{third}"
    assert tasks[0]["input"].count("[event]") == 3
    assert await store.scalar("SELECT pending FROM trigger_cursors") == "[]"


async def test_event_chain_counts_triggers_in_a_row_and_the_sixth_link_is_rejected(
    store: Store,
) -> None:
    await watcher(store, {"type": ["task.failed"]})

    def two_events(tx: Tx) -> None:
        emit(tx, "task.failed", task_id=other_task(tx, chain=2, source="event:elsewhere"))
        emit(tx, "task.failed", task_id=other_task(tx, chain=5, source="event:elsewhere"))

    await store.write(two_events)
    report = await tick(store, T0 + 1000)
    assert len(report.fired) == 1 and report.rejected == 1
    assert [t["event_chain"] for t in await fired_tasks(store)] == [3]
    rejected = await store.one(
        "SELECT status, reason, task_id FROM trigger_events WHERE status = 'rejected'"
    )
    assert rejected is not None and rejected["task_id"] is None
    assert rejected["reason"].startswith("event_chain:")


async def test_coalesce_merges_events_into_the_queued_task_instead_of_firing_another(
    store: Store,
) -> None:
    await watcher(store, {"type": ["task.failed"]}, coalesce="30s")
    a = await store.write(lambda tx: emit(tx, "task.failed", at=T0))
    assert len((await tick(store, T0)).fired) == 1
    b = await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 10_000))
    report = await tick(store, T0 + 10_000)
    assert report.fired == [] and report.merged == 1
    [task] = await fired_tasks(store)
    assert f'"seq":{a}' in task["input"].replace(" ", "") and f'"seq":{b}' in task["input"].replace(
        " ", ""
    )
    merged = await store.one("SELECT data FROM events WHERE type = 'task.merged'")
    assert merged is not None and f"event:react:{b}" in merged["data"]
    # Outside the coalesce window, or once the task left the queue, an event fires its own task.
    c = await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 60_000))
    assert len((await tick(store, T0 + 60_000)).fired) == 1
    await store.write(
        lambda tx: tx.execute("UPDATE tasks SET state = 'running' WHERE source = 'event:react'")
    )
    await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 61_000))
    assert len((await tick(store, T0 + 61_000)).fired) == 1
    keys = [t["idempotency_key"] for t in await fired_tasks(store)]
    assert keys[:2] == [f"event:react:{a}", f"event:react:{c}"] and len(keys) == 3


async def test_a_held_provider_account_keeps_the_cursor_until_retry_at(store: Store) -> None:
    dep = await watcher(store, {"type": ["task.failed"]})
    await store.write(lambda tx: providers.sync_accounts(tx, dep.id, [ACCT]))

    def hold(tx: Tx) -> providers.ProviderHoldRow:
        tx.now_ms = T0
        return providers.record_account_error(tx, ACCT, reason="401 invalid key")

    held = await store.write(hold)
    cursor = await store.scalar("SELECT seq FROM trigger_cursors")
    seq = await store.write(lambda tx: emit(tx, "task.failed", at=T0 + 1000))
    assert (await tick(store, T0 + 2000)).fired == []
    assert await store.scalar("SELECT seq FROM trigger_cursors") == cursor
    report = await tick(store, held.retry_at_ms)  # the probe may run: events flow again
    assert len(report.fired) == 1
    assert (await fired_tasks(store))[0]["idempotency_key"] == f"event:react:{seq}"


async def test_the_leader_tick_fires_event_triggers(store: Store) -> None:
    await watcher(store, {"type": ["deployment.updated"]})
    await store.write(lambda tx: emit(tx, "deployment.updated"))
    epoch = await store.write(lambda tx: acquire_or_renew(tx, HUB_LEADER, "hub-a", 60_000))
    assert epoch is not None
    report = await store.write(lambda tx: fleet_tick(tx, leader_epoch=epoch, now_ms=T0 + 1000))
    assert len(report.triggers.fired) == 1
