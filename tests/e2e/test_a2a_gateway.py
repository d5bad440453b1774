"""A real `agen up`'s A2A Gateway, called by the official a2a-sdk client (A2A 1.0) and by a plain
JSON-RPC client written from the v0.3 specification (an older client): card, send, stream, get, cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.harness import Up
from tests.fleet_helpers import write_bundle


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    up = Up(tmp_path / "home").start()
    try:
        up.wait_gateway()
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        # max 0: its tasks stay queued, so a call made with returnImmediately can be cancelled
        parked = write_bundle(
            tmp_path / "parked", "parked", config={"kind": "pool", "scale": {"max": 0}}
        )
        up.agen("deploy", str(parked))
        yield up
    finally:
        up.stop()


def _operator(up: Up) -> str:
    return up.agen("token", "create", "--scope", "operator", "--name", "a2a").stdout.strip()


async def _official_client_session(up: Up, token: str) -> dict[str, Any]:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
        TaskState,
    )

    assert up.gateway_url is not None
    seen: dict[str, Any] = {}
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        card = await A2ACardResolver(http, f"{up.gateway_url}/a2a/default/echo").get_agent_card()
        seen["card"] = card

        def message(text: str, mid: str) -> SendMessageRequest:
            return SendMessageRequest(
                message=Message(role=Role.ROLE_USER, message_id=mid, parts=[Part(text=text)])
            )

        plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        sent = [e async for e in plain.send_message(message("hello there", "m-1"))]
        seen["sent"] = sent[-1].task
        seen["got"] = await plain.get_task(GetTaskRequest(id=sent[-1].task.id))

        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        seen["stream"] = [e async for e in streaming.send_message(message("stream it", "m-2"))]

        parked_card = await A2ACardResolver(
            http, f"{up.gateway_url}/a2a/default/parked"
        ).get_agent_card()
        parked = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(parked_card)
        later = message("wait for me", "m-3")
        later.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        queued = [e async for e in parked.send_message(later)][-1].task
        seen["queued"] = queued
        seen["cancelled"] = await parked.cancel_task(CancelTaskRequest(id=queued.id))
        seen["states"] = TaskState
    return seen


def test_the_official_a2a_client_reads_the_card_sends_streams_gets_and_cancels(up: Up) -> None:
    seen = asyncio.run(_official_client_session(up, _operator(up)))
    states = seen["states"]
    card = seen["card"]
    assert card.name == "echo"
    assert card.capabilities.streaming
    assert "bearer" in card.security_schemes
    assert card.supported_interfaces[0].url == f"{up.gateway_url}/a2a/default/echo"

    sent = seen["sent"]
    assert sent.status.state == states.TASK_STATE_COMPLETED
    assert sent.artifacts[0].parts[0].text == "You said: hello there"
    assert seen["got"].id == sent.id and seen["got"].status.state == states.TASK_STATE_COMPLETED

    stream = seen["stream"]
    assert stream[0].HasField("task")  # the task first, then its answer, then its end
    assert any(
        e.HasField("artifact_update")
        and e.artifact_update.artifact.parts[0].text == "You said: stream it"
        for e in stream
    )
    assert stream[-1].status_update.status.state == states.TASK_STATE_COMPLETED

    assert seen["queued"].status.state == states.TASK_STATE_SUBMITTED
    assert seen["cancelled"].status.state == states.TASK_STATE_CANCELED
    task = up.http("GetTask", {"id": seen["queued"].id}).json()["task"]
    assert task["state"] == "cancelled"  # the agen task itself, not only the A2A view


def _rpc(
    up: Up, token: str, method: str, params: dict[str, Any], deployment: str = "echo"
) -> httpx.Response:
    return httpx.post(
        f"{up.gateway_url}/a2a/default/{deployment}",
        json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def test_an_older_jsonrpc_client_sends_streams_and_gets_with_v03_method_names(up: Up) -> None:
    token = _operator(up)
    message = {
        "kind": "message",
        "role": "user",
        "messageId": "old-1",
        "contextId": "conv-1",
        "parts": [{"kind": "text", "text": "from an old client"}],
    }
    sent = _rpc(up, token, "message/send", {"message": message}).json()["result"]
    assert sent["kind"] == "task" and sent["status"]["state"] == "completed"
    assert sent["contextId"] == "conv-1"
    assert sent["artifacts"][0]["parts"][0] == {
        "kind": "text",
        "text": "You said: from an old client",
    }

    got = _rpc(up, token, "tasks/get", {"id": sent["id"]}).json()["result"]
    assert got["id"] == sent["id"] and got["status"]["state"] == "completed"

    streamed = {**message, "messageId": "old-2", "parts": [{"kind": "text", "text": "again"}]}
    with httpx.stream(
        "POST",
        f"{up.gateway_url}/a2a/default/echo",
        json={
            "jsonrpc": "2.0",
            "id": 8,
            "method": "message/stream",
            "params": {"message": streamed},
        },
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line[len("data:") :])["result"]
            for line in resp.iter_lines()
            if line.startswith("data:")
        ]
    assert events[0]["kind"] == "task"
    assert events[-1]["kind"] == "status-update" and events[-1]["status"]["state"] == "completed"
    assert events[-1]["final"] is True
    # the same contextId from the same caller continued one conversation
    tasks = up.http("ListTasks", {"deployment": "echo"}).json()["tasks"]
    assert len({t["conversation_key"] for t in tasks}) == 1


def test_agen_call_streams_the_answer_and_continues_a_context_and_agen_resolve_prints_the_endpoint(
    up: Up,
) -> None:
    first = up.agen("call", "default/echo", "first words")
    assert first.stdout.strip() == "You said: first words"
    context = first.stderr.split("context ")[1].split()[0]

    again = up.json("call", "echo", "second words", "--context", context)
    assert again["contextId"] == context
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert again["artifacts"][0]["parts"][0]["text"] == "You said: second words"
    tasks = up.http("ListTasks", {"deployment": "echo"}).json()["tasks"]
    assert len(tasks) == 2 and len({t["conversation_key"] for t in tasks}) == 1

    resolved = up.json("resolve", "default/echo")
    assert resolved["urls"] == [f"{up.gateway_url}/a2a/default/echo"]
    assert resolved["card"]["name"] == "echo"
    assert resolved["card"]["capabilities"]["streaming"] is True
    assert up.agen("resolve", "echo").stdout.strip() == f"{up.gateway_url}/a2a/default/echo"

    up.agen("stop", "echo")
    paused = up.agen("call", "echo", "anyone there?", check=False)
    assert paused.returncode == 3  # unavailable: try again later
    assert "paused" in paused.stderr and "retry after 60 s" in paused.stderr


def test_a_resolved_call_token_calls_its_deployment_only_and_a_bundle_delegates_by_name_and_url(
    up: Up, tmp_path: Path
) -> None:
    """Call tokens through a real `agen up` (the Gateway reaches the Hub over HTTP with the caller's
    bearer): an operator's from `agen resolve`, an agent's for `via: "a2a"` by name and for a url
    naming this Hub's Gateway; the callee's tasks sit in the caller's tree."""
    assert up.gateway_url is not None
    resolved = up.json("resolve", "echo")
    token = resolved["call_token"]
    assert token.startswith("agen-ct1.")
    ok = _rpc(up, token, "message/send", {"message": _message("by token", "t1")})
    assert ok.status_code == 200, ok.text
    assert ok.json()["result"]["artifacts"][0]["parts"][0]["text"] == "You said: by token"
    other = _rpc(up, token, "message/send", {"message": _message("hi", "t2")}, "parked")
    assert other.status_code == 403
    assert "it is for default/echo, not default/parked" in other.json()["error"]["message"]

    boss = write_bundle(
        tmp_path / "boss",
        "boss",
        script=[
            {
                "tool_calls": [
                    {"name": "call_agent", "arguments": {"agent": "echo", "input": "one"}}
                ]
            },
            {"tool_calls": [{"name": "call_agent", "arguments": {"agent": "url", "input": "two"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "asked twice"}}]},
        ],
        config={
            "kind": "pool",
            "scale": {"min": 0, "max": 1},
            "permissions": {"allow": ["call_agent"]},
            "delegates": [
                {"name": "echo", "via": "a2a"},
                {"name": "url", "url": f"{up.gateway_url}/a2a/default/echo"},
            ],
        },
    )
    up.agen("deploy", str(boss))
    ran = up.json("run", "boss", "go")
    assert ran["state"] == "succeeded", ran
    tasks = up.http("ListTasks", {"deployment": "echo"}).json()["tasks"]
    delegated = [t for t in tasks if t["parent_run_id"]]
    assert sorted(t["input"] for t in delegated) == ["one", "two"]
    assert {t["depth"] for t in delegated} == {1}
    assert all(t["state"] == "succeeded" for t in delegated)


def _message(text: str, mid: str) -> dict[str, Any]:
    return {"role": "user", "messageId": mid, "parts": [{"kind": "text", "text": text}]}


def test_the_card_reads_as_a_v03_card_and_call_and_resolve_reach_an_agent_by_its_url(
    up: Up,
) -> None:
    """An a2a-sdk 0.3 client needs the card's top-level url (its resolver fails without one); a
    foreign agent is reached by URL with its own token; --timeout ends the wait with exit 8."""
    from a2a.compat.v0_3.types import AgentCard as AgentCardV03

    token = _operator(up)
    endpoint = f"{up.gateway_url}/a2a/default/echo"
    raw = httpx.get(
        f"{endpoint}/.well-known/agent-card.json",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()
    old = AgentCardV03.model_validate(raw)
    assert old.url == endpoint and old.preferred_transport == "JSONRPC"
    assert [s.id for s in old.skills] == ["echo"]  # a bundle without skills: the agent itself

    outside = {"AGEN_HOME": str(up.home / "elsewhere")}  # no local `agen up` to lean on
    resolved = json.loads(
        up.agen("resolve", endpoint, "--token", token, "--json", env_extra=outside).stdout
    )
    assert endpoint in resolved["urls"] and resolved["card"]["name"] == "echo"
    called = up.agen("call", endpoint, "by url", "--token", token, env_extra=outside)
    assert called.stdout.strip() == "You said: by url"
    # the card reads without a token here (loopback, agen up), the call does not
    assert httpx.get(f"{endpoint}/.well-known/agent-card.json", timeout=30).status_code == 200
    refused = up.agen("call", endpoint, "no token", env_extra=outside, check=False)
    assert refused.returncode == 6, refused.stderr  # 401: not allowed

    waited = up.agen("call", "default/parked", "never starts", "--timeout", "1s", check=False)
    assert waited.returncode == 8, waited.stderr
    assert "no answer within 1s; the task goes on at the agent" in waited.stderr
