"""Two Hubs on one Postgres store pass each other their live events (agen.hub.rpc.live.LiveRelay over
NOTIFY on ``agen_live``): what reaches Hub A's bus reaches Hub B's marked relayed, and Hub B never
sends it back; a big delta arrives whole, in pieces under the NOTIFY limit."""

from __future__ import annotations

import asyncio

from agen.domain.live import LiveBus, LiveEvent
from agen.hub.rpc.live import LiveRelay
from agen.hub.service import Hub
from agen.store.postgres import PostgresStore


def delta(text: str, run: str = "run-1") -> LiveEvent:
    return LiveEvent(
        "run.delta", "default", "bot", run, "t1", {"turn": 1, "text": text, "kind": "text"}, 1
    )


async def next_event(queue: asyncio.Queue[LiveEvent]) -> LiveEvent:
    return await asyncio.wait_for(queue.get(), 30)  # bounds a broken test only


async def test_live_events_reach_the_other_hub_once_and_never_come_back(pg_url: str) -> None:
    stores = [await PostgresStore.open(pg_url) for _ in range(2)]
    try:
        hub_a, hub_b = Hub(stores[0]), Hub(stores[1])
        hub_a.live, hub_b.live = LiveBus(), LiveBus()
        relays = [LiveRelay(hub_a), LiveRelay(hub_b)]
        for relay in relays:
            relay.start()
        with (
            hub_a.live.subscribe(lambda e: True) as on_a,
            hub_b.live.subscribe(lambda e: True) as on_b,
        ):
            # the listeners LISTEN on agen_live once a follower asked: wait until B hears A
            while True:
                hub_a.live.publish(delta("ping", run="probe"))
                try:
                    e = await asyncio.wait_for(on_b.queue.get(), 0.5)
                except TimeoutError:
                    continue
                if e.run_id == "probe":
                    break

            big = "word " * 5_000  # 25 KB: several NOTIFY payloads
            hub_a.live.publish(delta("Hel"))
            hub_a.live.publish(delta(big))
            hub_a.live.publish(delta("lo"))
            got: list[LiveEvent] = []
            while "".join(e.data["text"] for e in got) != "Hel" + big + "lo":
                e = await next_event(on_b.queue)
                if e.run_id == "run-1":  # not a late probe
                    got.append(e)
            assert all(e.relayed and e.run_id == "run-1" for e in got)
            assert len(got) > 3  # the big one came in pieces

            # B's own events go to A, and what A had relayed to B is not echoed back to A
            hub_b.live.publish(delta("from b", run="run-b"))
            back = await next_event(on_a.queue)
            while back.run_id != "run-b":  # A's own events, in its queue since the probe
                assert not back.relayed
                back = await next_event(on_a.queue)
            assert back.relayed and back.data["text"] == "from b"
        for relay in relays:
            await relay.stop()
    finally:
        for s in stores:
            await s.close()


async def test_a_hub_relays_only_while_another_hub_has_a_follower(pg_url: str) -> None:
    """No follower on another Hub: the relay takes no event (so a run is not streamed for it and no
    NOTIFY is sent); once Hub B has one, B says so and A's relay takes A's events."""
    stores = [await PostgresStore.open(pg_url) for _ in range(2)]
    try:
        hub_a, hub_b = Hub(stores[0]), Hub(stores[1])
        hub_a.live, hub_b.live = LiveBus(), LiveBus()
        relays = [LiveRelay(hub_a), LiveRelay(hub_b)]
        for relay in relays:
            relay.start()
        assert not hub_a.live.wants(delta("unwatched"))  # only the relay subscribes on A
        with hub_b.live.subscribe(lambda e: True) as on_b:
            for _ in range(3000):  # B's ask reaches A through NOTIFY (30 s bounds a broken test)
                if stores[0].live_wanted():
                    break
                await asyncio.sleep(0.01)
            assert hub_a.live.wants(delta("watched elsewhere"))
            hub_a.live.publish(delta("hello", run="run-w"))
            e = await next_event(on_b.queue)
            while e.run_id != "run-w":
                e = await next_event(on_b.queue)
            assert e.relayed and e.data["text"] == "hello"
        for relay in relays:
            await relay.stop()
    finally:
        for store in stores:
            await store.close()
