"""Live events carried between processes in batches (agen.domain.live_batches): a full batch goes at
once, a partial one when its window closes, in order, each event once; a send that fails drops its
batch with one warning however many fail after it, and never holds a run up; a Manager beside its Hub
forwards nothing, one whose Hub is elsewhere forwards its process's bus from registration to the end of
its drain. And the NOTIFY payloads one Hub sends the others stay under Postgres' limit."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from agen.domain.live import BUS, LiveBus, LiveEvent
from agen.domain.live_batches import LiveBatcher
from agen.hub.rpc.live import notify_payloads
from agen.nest.manager import Manager
from agen.testing.fake_hub_port import FakeHubPort
from agen.wire.nests import LiveEventWire
from tests.unit.nest_helpers import Factory

HOUR = 3600.0


def delta(i: int, text: str = "w", run: str = "r1") -> LiveEvent:
    return LiveEvent(
        "run.delta", "default", "bot", run, "t1", {"turn": 1, "text": text, "kind": "text"}, i
    )


class Sink:
    """A send that records each batch and lets the test wait for the next one."""

    def __init__(self) -> None:
        self.batches: list[list[LiveEvent]] = []
        self.arrived = asyncio.Queue[list[LiveEvent]]()
        self.fail: Exception | None = None

    async def __call__(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        if self.fail is not None:
            raise self.fail
        self.batches.append(list(events))
        self.arrived.put_nowait(list(events))
        return []

    async def next(self) -> list[LiveEvent]:
        return await asyncio.wait_for(self.arrived.get(), 30)  # bounds a broken test only


async def test_a_full_batch_goes_at_once_and_the_rest_when_its_window_closes() -> None:
    bus, sink = LiveBus(), Sink()
    batches = LiveBatcher(sink, "test", bus=bus, every_s=HOUR, batch=64)
    batches.start()
    for i in range(150):
        bus.publish(delta(i))
    # a window of an hour: only a full batch can have gone before stop
    assert [e.created_ms for e in await sink.next()] == list(range(64))
    assert [e.created_ms for e in await sink.next()] == list(range(64, 128))
    await batches.stop()  # sends what it had read: the last 22, without waiting out the window
    assert [e.created_ms for b in sink.batches for e in b] == list(range(150))
    assert batches.sent == 150 and batches.lost == 0


async def test_a_lone_event_goes_when_its_window_closes() -> None:
    bus, sink = LiveBus(), Sink()
    batches = LiveBatcher(sink, "test", bus=bus, every_s=0.01, batch=64)
    batches.start()
    bus.publish(delta(1))
    assert [e.created_ms for e in await sink.next()] == [1]
    bus.publish(delta(2))
    assert [e.created_ms for e in await sink.next()] == [2]
    await batches.stop()


async def test_a_failing_send_drops_its_batch_with_one_warning_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus, sink, now = LiveBus(), Sink(), [0.0]
    batches = LiveBatcher(
        sink,
        "nest n1: live events to the Hub",
        bus=bus,
        every_s=HOUR,
        batch=2,
        clock=lambda: now[0],
    )
    sink.fail = ConnectionError("the Hub is away")
    batches.start()
    with caplog.at_level(logging.WARNING, logger="agen.live"):
        for i in range(6):  # three batches, each failing
            bus.publish(delta(i))  # publishing never waits for a send
        await until_lost(batches, 6)
        warned = [r.getMessage() for r in caplog.records if r.name == "agen.live"]
        assert len(warned) == 1
        assert warned[0].startswith("nest n1: live events to the Hub: 2 live events not sent")
        assert "the Hub is away" in warned[0] and "record is unaffected" in warned[0]
        now[0] += 61  # a minute on: the next problem is told, with the count of the unsaid ones
        bus.publish(delta(6))
        bus.publish(delta(7))
        await until_lost(batches, 8)
        warned = [r.getMessage() for r in caplog.records if r.name == "agen.live"]
        assert len(warned) == 2 and "2 more problems since the last warning" in warned[1]
    sink.fail = None  # the Hub is back: the next batch goes through, the dropped ones never do
    bus.publish(delta(8))
    bus.publish(delta(9))
    assert [e.created_ms for e in await sink.next()] == [8, 9]
    await batches.stop()
    assert batches.sent == 2 and batches.lost == 8


async def until_lost(batches: LiveBatcher, n: int) -> None:
    for _ in range(3000):
        if batches.lost >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{batches.lost} lost, expected {n}")


def manager(port: FakeHubPort) -> Manager:
    return Manager(port, executor_factory=Factory(), name="n1")


async def test_a_manager_forwards_its_bus_only_to_a_hub_in_another_process() -> None:
    beside, away = FakeHubPort(), FakeHubPort()
    away.hub_in_process = False
    near, far = manager(beside), manager(away)
    await near.start()
    await far.start()
    BUS.publish(delta(1, "hello", run="r-forwarded"))
    await near.drain(5)
    await far.drain(5)  # the end of the drain sends what the runs said last
    forwarded = [e for batch in away.live for e in batch if e.run_id == "r-forwarded"]
    assert [e.data["text"] for e in forwarded] == ["hello"]
    assert beside.live == [] and not near.live.running


def test_notify_payloads_split_a_big_delta_and_stay_under_the_limit() -> None:
    big = "".join(chr(c) for c in range(1, 0x3000)) * 3  # control characters escape to 6 bytes
    events = [
        delta(1, "before"),
        delta(2, big),
        delta(3, "after"),
        LiveEvent("tool.finished", "default", "bot", "r1", "t1", {"tool": "x" * 20_000}, 4),
    ]
    payloads = notify_payloads(events, limit=7_900)
    assert len(payloads) > 10
    assert all(len(p.encode()) <= 7_900 for p in payloads)
    back = [LiveEventWire.model_validate(item).event() for p in payloads for item in json.loads(p)]
    texts = [e.data["text"] for e in back if e.type == "run.delta"]
    assert texts[0] == "before" and texts[-1] == "after" and "".join(texts[1:-1]) == big
    assert [e.created_ms for e in back if e.type == "run.delta"] == [1] + [2] * (len(texts) - 2) + [
        3
    ]
    (tool,) = [e for e in back if e.type == "tool.finished"]
    assert tool.data["truncated"] is True and len(tool.data["tool"]) == 201
