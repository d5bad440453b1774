"""`agen run` prints the answer while the model is still writing it: a local OpenAI-compatible stub
holds the rest of its stream after the first words until the test has read them from `agen run`'s
stdout, so the words can only have come through the stream. Embedded (no `agen up`) and over HTTP
to a running `agen up` (its SSE door); and A2A message/stream, read by the official a2a-sdk client,
gets the same words as artifact updates before the stub sends the rest."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from agen.testing.openai_server import OpenAIServer, Reply
from tests.e2e.harness import AGEN, Up, streamer_bundle

ANSWER = "First words, then the rest of the answer once the stub lets it go."


def read_until(proc: subprocess.Popen[bytes], text: str, timeout_s: float = 60) -> bytes:
    """stdout as it comes, until ``text`` shows up (the deadline only bounds a broken run)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout_s
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            raise AssertionError(f"no {text!r} on stdout yet: {seen!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"agen run ended before printing {text!r}: {seen!r}")
        seen += chunk
    return seen


def streams_before_the_stub_finishes(
    argv: list[str], env: dict[str, str], stub: OpenAIServer
) -> None:
    hold = threading.Event()
    stub.script(Reply(text=ANSWER, hold=hold))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = read_until(proc, "First ")
        assert not hold.is_set() and stub.requests[-1]["stream"] is True
        hold.set()  # the stub sends the rest only now
        out, err = proc.communicate(timeout=120)
    finally:
        hold.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert (first + out).decode() == ANSWER + "\n"  # streamed once, not printed again at the end
    assert "succeeded" in err.decode()


def test_embedded_run_prints_the_first_words_before_the_stub_sends_the_rest(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["AGEN_HOME"] = str(tmp_path / "home")
    with OpenAIServer() as stub:
        argv = [AGEN, "run", str(streamer_bundle(tmp_path / "b", stub.base_url)), "hi", "--stream"]
        streams_before_the_stub_finishes(argv, env, stub)


def test_run_against_agen_up_streams_over_its_event_stream(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        with OpenAIServer() as stub:
            up.agen("deploy", str(streamer_bundle(tmp_path / "b", stub.base_url)))
            argv = [AGEN, "run", "streamer", "hi", "--stream"]
            streams_before_the_stub_finishes(argv, up.env, stub)
            # --no-stream waits for the end and prints the outcome once
            stub.script(Reply(text="all at once"))
            r = up.agen("run", "streamer", "hi", "--no-stream")
            assert r.stdout == "all at once\n"
    finally:
        up.stop()


async def _a2a_stream(up: Up, token: str, hold: threading.Event) -> list[Any]:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, SendMessageRequest

    assert up.gateway_url is not None
    events: list[Any] = []
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        card = await A2ACardResolver(
            http, f"{up.gateway_url}/a2a/default/streamer"
        ).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        request = SendMessageRequest(
            message=Message(role=Role.ROLE_USER, message_id="m-1", parts=[Part(text="hi")])
        )
        async for event in client.send_message(request):
            events.append(event)
            update = event.artifact_update if event.HasField("artifact_update") else None
            if update is not None and update.artifact.parts[0].text == "First ":
                assert not update.last_chunk
                hold.set()  # the stub sends the rest only once the first words came through A2A
    return events


def test_a2a_message_stream_sends_the_answer_as_artifact_updates_while_it_streams(
    tmp_path: Path,
) -> None:
    up = Up(tmp_path / "home").start()
    hold = threading.Event()
    try:
        up.wait_gateway()
        with OpenAIServer() as stub:
            stub.script(Reply(text=ANSWER, hold=hold))
            up.agen("deploy", str(streamer_bundle(tmp_path / "b", stub.base_url)))
            token = up.agen(
                "token", "create", "--scope", "operator", "--name", "a2a"
            ).stdout.strip()
            events = asyncio.run(_a2a_stream(up, token, hold))
    finally:
        hold.set()
        up.stop()
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    live = [u for u in updates if not u.last_chunk]
    # the deltas add up to the answer in one artifact (the first starts it, the rest append) ...
    assert "".join(u.artifact.parts[0].text for u in live) == ANSWER
    assert [u.append for u in live] == [False] + [True] * (len(live) - 1)
    assert {u.artifact.artifact_id for u in updates} == {live[0].artifact.artifact_id}
    # ... which the last update replaces with the whole answer, before the task's end
    assert updates[-1].last_chunk and not updates[-1].append
    assert updates[-1].artifact.parts[0].text == ANSWER
    assert events[-1].HasField("status_update")
