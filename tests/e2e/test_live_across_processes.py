"""Live events of runs that run in another process reach the Hub's event stream, each once: an
`agen up` whose instances are `agen host serve` children (`--backend process`), a separate
`agen nest run` beside an `agen hub serve` (inproc and process backends), and a Nest that talks to
one of two Hubs on one Postgres store, followed on the other. The local stub holds its stream after
the first words until the test has seen them arrive, so they can only have come live."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from agen.testing.openai_server import OpenAIServer, Reply
from tests.e2e.harness import AGEN, Up, streamer_bundle, wait_until
from tests.e2e.test_nest_run import Nest
from tests.e2e.test_run_streams import ANSWER, streams_before_the_stub_finishes

WAIT_S = 60  # bounds a broken run only


def test_agen_up_with_process_hosts_streams_a_run_over_http(tmp_path: Path) -> None:
    up = Up(tmp_path / "home", args=("--backend", "process")).start()
    try:
        with OpenAIServer() as stub:
            up.agen("deploy", str(streamer_bundle(tmp_path / "b", stub.base_url)))
            argv = [AGEN, "run", "streamer", "hi", "--stream"]
            streams_before_the_stub_finishes(argv, up.env, stub)  # printed once: never doubled
    finally:
        up.stop()


class Follower:
    """`GET /api/v1/events?type=run.delta` on a Hub, read in a thread: each frame's event."""

    def __init__(self, hub: Up) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.connected = threading.Event()
        self.status = 0
        self._url = f"{hub.url}/api/v1/events"
        self._token = hub.local()["token"]
        threading.Thread(target=self._read, daemon=True).start()
        assert self.connected.wait(WAIT_S) and self.status == 200, "the event stream did not answer"

    def _read(self) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        timeout = httpx.Timeout(30, read=None)
        try:
            with httpx.stream(
                "GET", self._url, params={"type": "run.delta"}, headers=headers, timeout=timeout
            ) as resp:
                self.status = resp.status_code
                self.connected.set()
                for line in resp.iter_lines():
                    if line.startswith("data:"):
                        self.events.put(json.loads(line[5:]))
        except httpx.HTTPError:  # the Hub stopped at the test's end
            pass
        finally:
            self.connected.set()

    def text_of(self, task_id: str, until: str) -> str:
        """The task's streamed text so far, read until it holds ``until``."""
        text = ""
        while until not in text:
            event = self.events.get(timeout=WAIT_S)
            assert event["seq"] is None  # live: no place in the log
            if event["task_id"] == task_id and event["data"]["kind"] == "text":
                text += event["data"]["text"]
        return text


def streams_to_the_follower(submit_to: Up, follower: Follower, stub: OpenAIServer) -> None:
    """A task whose first words the follower sees while the stub holds the rest; then the whole
    answer, each delta once, and the task succeeds."""
    hold = threading.Event()
    stub.script(Reply(text=ANSWER, hold=hold))
    try:
        r = submit_to.http("SubmitTask", {"deployment": "streamer", "input": "hi"})
        assert r.status_code == 200, r.text
        task_id = r.json()["task"]["id"]
        first = follower.text_of(task_id, "First ")
        assert not hold.is_set() and first == "First "
        hold.set()  # the stub sends the rest only now
        assert first + follower.text_of(task_id, "stub lets it go.") == ANSWER
    finally:
        hold.set()

    def ended() -> bool:
        got = submit_to.http("GetTask", {"id": task_id}).json()["task"]
        return bool(got["state"] == "succeeded")

    wait_until(ended, WAIT_S, "the task to succeed")


@pytest.mark.parametrize("backend", ["inproc", "process"])
def test_a_nest_in_another_process_puts_its_deltas_on_the_hubs_event_stream(
    tmp_path: Path, backend: str
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    try:
        with OpenAIServer() as stub:
            hub.agen("deploy", str(streamer_bundle(tmp_path / "b", stub.base_url)))
            join = hub.json("join-token", "create")["token"]
            nest = Nest(hub, tmp_path / "nest", "n1", "--join-token", join, "--backend", backend)
            follower = Follower(hub)
            streams_to_the_follower(hub, follower, stub)
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()


def test_a_follower_on_another_hub_of_the_store_sees_the_deltas(
    tmp_path: Path, pg_url: str
) -> None:
    hub_a = Up(tmp_path / "hub-a", command=("hub", "serve"), args=("--store", pg_url))
    hub_b = Up(tmp_path / "hub-b", command=("hub", "serve"), args=("--store", pg_url))
    nest: Nest | None = None
    try:
        hub_a.start()
        hub_b.start()
        with OpenAIServer() as stub:
            hub_a.agen("deploy", str(streamer_bundle(tmp_path / "b", stub.base_url)))
            join = hub_a.json("join-token", "create")["token"]
            # the Nest knows Hub A only; the follower reads Hub B
            nest = Nest(hub_a, tmp_path / "nest", "n1", "--join-token", join, store=pg_url)
            follower = Follower(hub_b)
            streams_to_the_follower(hub_a, follower, stub)
    finally:
        if nest is not None:
            nest.stop()
        hub_b.stop()
        hub_a.stop()
