"""call_agent's synchronous A2A path (seed 000 §6) on the real stack (LocalNode: Hub, leader, Nest,
Runner, SQLite) against a real A2A agent built with a2a-sdk's server classes (tests/a2a_server.py):
the answer, lineage metadata, no agen bearer for an outside agent, the effect ledger, failures, cancel, limits."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agen.api import registry as r
from agen.client import Client
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.tasks import CancelTaskRequest
from tests.a2a_server import Seen, a2a_server
from tests.integration.test_delegation import Stack, call, finish


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05, capacity=8)
    await node.start()
    try:
        yield Stack(node, Client.in_process(node.hub), tmp_path)
    finally:
        await node.drain(5)
        await store.close()


@pytest.fixture
def remote() -> Iterator[tuple[str, Seen]]:
    with a2a_server() as served:
        yield served


async def _call_result(stack: Stack, task_id: str) -> dict[str, object]:
    [result] = [m for m in await stack.tool_results(task_id) if m["name"] == "call_agent"]
    return result


async def test_call_agent_over_a2a_answers_with_the_remote_agents_reply_and_carries_lineage(
    stack: Stack, remote: tuple[str, Seen]
) -> None:
    url, seen = remote
    await stack.deploy(
        "boss",
        [call("call_agent", agent="remote", input="summarise the report"), finish("done")],
        delegates=[{"name": "remote", "url": url, "description": "an outside agent"}],
    )
    boss = await stack.submit("boss")
    assert (await stack.wait(boss)).state == "succeeded"
    result = await _call_result(stack, boss)
    assert result["content"] == "remote says: summarise the report"
    assert not result["is_error"]

    run = await stack.store.one("SELECT id, root_run_id FROM runs WHERE task_id = ?", (boss,))
    assert run is not None
    [req] = seen.requests
    meta = req["metadata"]
    assert meta["agen.depth"] == 1
    assert meta["agen.parent_run_id"] == run["id"]
    assert meta["agen.root_run_id"] == run["root_run_id"]
    assert str(meta["traceparent"]).startswith("00-")
    assert req["message_id"].startswith(
        f"{run['id']}."
    )  # <run>.<step>.<call>: a repeat is one task

    # An outside agent (not this Hub's Gateway) gets no agen credential at all: a call token
    # names one agen deployment and is only ever sent to this Hub's own Gateway.
    assert set(seen.auth) == {None}

    # The call is a side effect: recorded started and completed in the effect ledger.
    effects = await stack.store.all(
        "SELECT tool, state FROM effects WHERE run_id = ?", (run["id"],)
    )
    assert effects == [{"tool": "call_agent", "state": "completed"}]


async def test_a_failed_remote_task_is_a_tool_error_and_the_run_goes_on(
    stack: Stack, remote: tuple[str, Seen]
) -> None:
    url, _seen = remote
    await stack.deploy(
        "boss",
        [call("call_agent", agent="remote", input="fail"), finish("coped")],
        delegates=[{"name": "remote", "url": url}],
    )
    boss = await stack.submit("boss")
    assert (await stack.wait(boss)).state == "succeeded"
    result = await _call_result(stack, boss)
    assert result["is_error"]
    assert result["content"] == "[failed] the remote agent broke"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("unreachable", "could not read the agent card at http://127.0.0.1:"),
        ("no card", "(HTTP 404)"),
        ("failing", "(HTTP 502)"),
        ("broken", "is not usable: no compatible transports found"),
        ("gone", "failed: HTTP Error 404"),
    ],
)
async def test_an_unreachable_agent_or_a_missing_failing_or_bad_card_is_a_clear_tool_error(
    stack: Stack, remote: tuple[str, Seen], where: str, expected: str
) -> None:
    paths = {"no card": "/nope", "failing": "/failing", "broken": "/broken", "gone": "/gone"}
    url = (
        f"http://127.0.0.1:{_closed_port()}"
        if where == "unreachable"
        else f"{remote[0]}{paths[where]}"
    )
    await stack.deploy(
        "boss",
        [call("call_agent", agent="remote", input="hi"), finish("coped")],
        delegates=[{"name": "remote", "url": url}],
    )
    boss = await stack.submit("boss")
    assert (await stack.wait(boss)).state == "succeeded"
    result = await _call_result(stack, boss)
    assert result["is_error"]
    assert str(result["content"]).startswith(f"call_agent to remote ({url}): ")
    assert expected in str(result["content"])


async def test_cancelling_the_calling_task_cancels_the_remote_task(
    stack: Stack, remote: tuple[str, Seen]
) -> None:
    url, seen = remote
    await stack.deploy(
        "boss",
        [call("call_agent", agent="remote", input="hang"), finish("never")],
        delegates=[{"name": "remote", "url": url}],
    )
    boss = await stack.submit("boss")
    await asyncio.to_thread(seen.hanging.wait, 60)
    assert seen.hanging.is_set()
    await stack.client.call(r.CancelTask, CancelTaskRequest(id=boss))
    assert (await stack.wait(boss)).state == "cancelled"
    deadline = time.monotonic() + 30
    while not seen.cancelled:
        assert time.monotonic() < deadline, "the remote task was never cancelled"
        await asyncio.sleep(0.05)
    assert len(seen.cancelled) == 1


async def test_a_call_cancelled_twice_while_it_waits_still_cancels_the_remote_task(
    remote: tuple[str, Seen],
) -> None:
    """A run can be cancelled twice (the Hub's cancel hint and its lost lease both stop it): the second
    cancellation must not cut off telling the remote agent to stop (it closed the HTTP client under it)."""
    from agen.runner.tools.a2a_call import call_a2a

    url, seen = remote
    for gap in (0.0, 0.05):  # the second cancel at once, and while the remote cancel is under way
        seen.hanging.clear()
        calling = asyncio.ensure_future(
            call_a2a(url, "hang", message_id=f"twice-{gap}", metadata={}, bearer=None, wait_s=60)
        )
        await asyncio.to_thread(seen.hanging.wait, 60)
        before = len(seen.cancelled)
        calling.cancel()
        await asyncio.sleep(gap)
        calling.cancel()
        with pytest.raises(asyncio.CancelledError):
            await calling
        assert len(seen.cancelled) == before + 1, "the remote task was not told to cancel"


@pytest.mark.parametrize("where", ["sending", "recording", "polling"])
async def test_a_call_cancelled_at_any_point_cancels_the_remote_task(
    remote: tuple[str, Seen], where: str
) -> None:
    """sending: the remote agent has created the task but its answer (the task's id) is still on the
    way; recording: the effect ledger is writing the task's id; polling: the call waits for the
    answer. Wherever the cancel lands, the remote task is told to stop."""
    from agen.runner.tools.a2a_call import call_a2a

    url, seen = remote
    recorded: list[str] = []
    told = asyncio.Event()

    async def on_task(task_id: str) -> None:
        recorded.append(task_id)
        told.set()
        if where == "recording":  # the ledger's write, still under way when the cancel lands
            await asyncio.Event().wait()

    calling = asyncio.ensure_future(
        call_a2a(
            f"{url}/held" if where == "sending" else url,
            "hang",
            message_id=f"at-{where}",
            metadata={},
            bearer=None,
            wait_s=60,
            on_task=on_task,
        )
    )
    if where == "sending":
        await asyncio.to_thread(seen.hanging.wait, 60)  # the task exists; its answer is held back
        calling.cancel()  # lands while the call waits for message/send's answer
        seen.answer.set()
    else:
        await told.wait()
        calling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await calling
    [created] = [r["task_id"] for r in seen.requests]
    assert recorded == ([] if where == "sending" else [created])
    assert seen.cancelled == [created], "the remote task was not told to cancel"


async def test_a2a_call_past_the_delegation_depth_limit_is_refused_without_calling(
    stack: Stack, remote: tuple[str, Seen]
) -> None:
    url, seen = remote
    await stack.deploy(
        "boss",
        [call("call_agent", agent="remote", input="hi"), finish("coped")],
        delegates=[{"name": "remote", "url": url}],
        limits={"maxDelegationDepth": 0},
    )
    boss = await stack.submit("boss")
    assert (await stack.wait(boss)).state == "succeeded"
    result = await _call_result(stack, boss)
    assert result["is_error"]
    assert "past limits.maxDelegationDepth 0" in str(result["content"])
    assert seen.requests == []
