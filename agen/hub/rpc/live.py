"""Live events into this Hub's bus from other processes (agen.domain.live), never stored.

Two doors. ``PublishLive``: a Nest in another process forwards its runs' events in batches (an
``agen nest run``, whose ``process`` hosts hand theirs to it over their pipes). ``LiveRelay``: the
Hubs of other processes on the same Postgres store pass on what reached their buses (NOTIFY on
``agen_live``), so an SSE follower sees every run whichever Hub its Nest talks to.

A Nest publishes only events of runs it runs. Each event names its task, whose namespace and
deployment it must carry (a Nest cannot speak into another namespace's stream), and that task must
be leased by the calling Nest, or held by no Nest and of a deployment assigned to this Nest (or run
there): a run's last events trail its task's completion by up to a batch, and are still its own. A task
another Nest holds, an unknown task, or an event without one is refused, per task, with the reason;
the rest of the batch is published. The run id is the Nest's word: a namespace's run data may live in
a store of its own the Hub does not read (``agen nest run --store-for``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from typing import NamedTuple

from pydantic import TypeAdapter, ValidationError

from agen.domain.live import LiveEvent
from agen.domain.live_batches import LiveBatcher
from agen.hub.auth import Principal
from agen.hub.service import Hub
from agen.store import LIVE_PAYLOAD_BYTES
from agen.wire import nests as m

ASK_EVERY_S = 5.0
"""How often a Hub with a follower of live events says so again (the others relay for 15 s after)."""

log = logging.getLogger("agen.hub")
_BATCH = TypeAdapter(list[m.LiveEventWire])
CUT_CHARS = 200  # a string of a too-big non-delta event's data is cut to this many characters


class _LiveTask(NamedTuple):
    id: str
    namespace: str
    deployment: str
    lease_nest_id: str | None
    serves: bool
    """The task's deployment is assigned to the calling Nest, or has had instances there."""


async def publish_live(hub: Hub, p: Principal, req: m.PublishLiveRequest) -> m.PublishLiveResponse:
    ids = sorted({e.task_id for e in req.events if e.task_id})
    tasks: dict[str, _LiveTask] = {}
    if ids:
        marks = ",".join("?" * len(ids))
        tasks = {
            t.id: t
            for t in await hub.store.rows(
                _LiveTask,
                "SELECT t.id, t.namespace, t.deployment, t.lease_nest_id, (EXISTS (SELECT 1 FROM"
                " assignments a WHERE a.nest_id = ? AND a.deployment_id = t.deployment_id) OR EXISTS"
                " (SELECT 1 FROM instances i WHERE i.nest_id = ? AND i.deployment_id = t.deployment_id))"
                f" AS serves FROM tasks t WHERE t.id IN ({marks})",
                (p.nest_id or "", p.nest_id or "", *ids),
            )
        }
    refused: dict[str | None, m.LiveRefusal] = {}
    published = 0
    for item in req.events:
        why = _refusal(p, item, tasks.get(item.task_id or ""))
        if why is None:
            hub.live.publish(item.event())
            published += 1
            continue
        r = refused.get(item.task_id)
        if r is None:
            refused[item.task_id] = m.LiveRefusal(task_id=item.task_id, events=1, reason=why)
        else:
            r.events += 1
    return m.PublishLiveResponse(published=published, refused=list(refused.values()))


def _refusal(p: Principal, e: m.LiveEventWire, task: _LiveTask | None) -> str | None:
    """Why the calling Nest may not publish ``e`` (None: it may)."""
    if e.task_id is None:
        return "a Nest's live event names the task of its run; this one names none"
    if task is None:
        return f"task {e.task_id} is not known to this Hub"
    if (e.namespace, e.deployment) != (task.namespace, task.deployment):
        return (
            f"task {task.id} is of {task.namespace}/{task.deployment}, not "
            f"{e.namespace}/{e.deployment}"
        )
    if not p.sees(task.namespace):
        return f"this Nest's credential does not reach namespace {task.namespace!r}"
    if p.nest_id is None or task.lease_nest_id == p.nest_id:
        return None  # the Hub's own Nest (not yet registered), or this Nest holds the lease
    if task.lease_nest_id is not None:
        return (
            f"task {task.id} is leased by nest {task.lease_nest_id}, not {p.nest_id}; a Nest "
            "publishes live events of its own runs only"
        )
    if not task.serves:
        return f"{task.namespace}/{task.deployment} is neither assigned to nest {p.nest_id} nor run there"
    return None


class LiveRelay:
    """This Hub's live events to the Hubs of other processes on its store, and theirs onto its bus.

    Only on a store several Hub processes share (Postgres). Whatever reaches this process's bus (its
    own Nest's runs, a ``process`` host's, a remote Nest's PublishLive) goes out in batches of NOTIFY
    payloads; what comes in is published here marked ``relayed``, so it never goes out again, and a
    Hub's own NOTIFYs are passed over by its listener (agen.store.postgres).

    Only while another Hub has a follower: a Hub with one says so when it subscribes and every
    ASK_EVERY_S after (``Store.ask_for_live``), and the others relay for LIVE_WANTED_S after they
    last heard it. With no follower elsewhere no NOTIFY is sent, and a run nobody watches is not
    streamed for the relay (``LiveBus.wants``)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        store = hub.store
        self.batches = LiveBatcher(
            self._send,
            f"hub: live events to the other Hubs on {store.url}",
            bus=hub.live,
            wants=lambda e: not e.relayed and store.live_wanted(),
        )
        self._asking: asyncio.Task[None] | None = None

    def start(self) -> None:
        store = self.hub.store
        if not store.live_across_processes or self.batches.running:
            return
        store.on_live(self._from_another_hub)
        self.hub.live.on_subscribe(self._ask_if_followed)
        self.batches.start()
        self._asking = asyncio.create_task(self._keep_asking(), name="agen-live-asking")

    def _ask_if_followed(self) -> None:
        if self.hub.live.subscribers() > 1:  # someone besides this relay
            self.hub.store.ask_for_live()

    async def _keep_asking(self) -> None:
        """While this Hub has a follower besides the relay itself, say so again before the other
        Hubs' LIVE_WANTED_S runs out."""
        while True:
            await asyncio.sleep(ASK_EVERY_S)
            self._ask_if_followed()

    async def stop(self) -> None:
        if self._asking is not None:
            self._asking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._asking
            self._asking = None
        await self.batches.stop()

    async def _send(self, events: list[LiveEvent]) -> list[tuple[int, str]]:
        self.hub.store.send_live(notify_payloads(events))
        return []

    def _from_another_hub(self, payload: str) -> None:
        try:
            batch = _BATCH.validate_json(payload)
        except ValidationError as e:
            log.warning("live events from another Hub not understood (%s)", e)
            return
        for item in batch:
            self.hub.live.publish(item.event(relayed=True))


def notify_payloads(events: list[LiveEvent], limit: int = LIVE_PAYLOAD_BYTES) -> list[str]:
    """``events`` as JSON arrays of at most ``limit`` UTF-8 bytes each, in order. A delta too big
    for one is split into several deltas of its text (a watcher joins them back as it does any
    deltas); any other event too big has its data's long strings cut (``truncated``), or is left
    out when even that does not fit."""
    out: list[str] = []
    items: list[str] = []
    size = 2  # the brackets
    for e in events:
        for text in _fitting(e, limit - 2):
            n = len(text.encode())
            if items and size + 1 + n > limit:
                out.append("[" + ",".join(items) + "]")
                items, size = [], 2
            size += n + (1 if items else 0)
            items.append(text)
    if items:
        out.append("[" + ",".join(items) + "]")
    return out


def _json(e: LiveEvent) -> str:
    return m.LiveEventWire.of(e).model_dump_json()


def _fitting(e: LiveEvent, limit: int) -> Iterator[str]:
    whole = _json(e)
    if len(whole.encode()) <= limit:
        yield whole
        return
    text = e.data.get("text")
    if e.type == "run.delta" and isinstance(text, str):
        empty = len(_json(_with(e, {**e.data, "text": ""})).encode())
        step = max(1, (limit - empty) // 6)  # a character is at most 6 bytes of JSON (\u001f)
        for i in range(0, len(text), step):
            yield _json(_with(e, {**e.data, "text": text[i : i + step]}))
        return
    cut = {
        k: v[:CUT_CHARS] + "…" if isinstance(v, str) and len(v) > CUT_CHARS else v
        for k, v in e.data.items()
    }
    small = _json(_with(e, {**cut, "truncated": True}))
    if len(small.encode()) <= limit:
        yield small
    else:
        log.warning("a %s event of run %s too big for the other Hubs: not sent", e.type, e.run_id)


def _with(e: LiveEvent, data: dict[str, object]) -> LiveEvent:
    return dataclasses.replace(e, data=data)


__all__ = ["LiveRelay", "notify_payloads", "publish_live"]
