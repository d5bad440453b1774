"""What the A2A Gateway answers a malformed or refused JSON-RPC call: a client error is -32700,
-32600 or -32602 with a fixed message (never Python's exception text), refusals answer the
request's id with their HTTP status, a body that is not UTF-8 JSON is 415, and an unplanned
failure is -32603 "internal error <id>" with the id and the traceback in the log only."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from agen.api import registry as r
from agen.api.registry import Rpc
from agen.client import Client
from agen.gateway import GatewayConfig, create_gateway_app
from agen.gateway.wake import WakePolicy
from agen.node import LocalNode
from agen.store import SQLiteStore
from agen.wire.deployments import PauseDeploymentRequest
from agen.wire.tokens import CreateTokenRequest
from tests.integration.test_a2a_gateway import _AsCaller, _deploy, _InProcessLink

# Python's own words for what a bad body broke: none may reach a caller.
RAW = ("recursion", "codec", "serialize", "out of range", "validation error", "Traceback", "nan")


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LocalNode]:
    store = await SQLiteStore.open(tmp_path / "gw.db")
    node = LocalNode(store, tick_s=0.05, heartbeat_s=0.05)
    await node.start()
    try:
        await _deploy(node, tmp_path, "echo", {"min": 0, "max": 1})
        yield node
    finally:
        await node.drain(5)
        await store.close()


class _FailingSubmits(_AsCaller):
    """The Hub in process, except that SubmitTask fails the way a bug would."""

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        if rpc.name == "SubmitTask":
            raise RuntimeError("boom at /srv/agen/secret/path")
        return await super().call(rpc, request)


class _FailingLink(_InProcessLink):
    def client(self, token: str) -> Client:
        return Client(_FailingSubmits(self.hub, token))


def _gateway(node: LocalNode, link: _InProcessLink | None = None) -> httpx.AsyncClient:
    app = create_gateway_app(
        GatewayConfig(
            hub_url="http://hub.invalid", public_url="http://gw.test", wake=WakePolicy(poll_s=0.02)
        ),
        link=link or _InProcessLink(node.hub),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")


async def _token(node: LocalNode, *namespaces: str) -> str:
    made = await Client.in_process(node.hub).call(
        r.CreateToken,
        CreateTokenRequest(scopes=["operator"], name="caller", namespaces=list(namespaces)),
    )
    return made.token


def _message(**extra: Any) -> dict[str, Any]:
    return {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}], **extra}


def _v03(method: str, params: Any, rid: Any = 7) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


SEND = b'{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":%s}}'
CASES: list[tuple[str, bytes, int, Any, str | None]] = [
    # (what, body, code, id answered, data.field)
    ("not JSON", b'{"jsonrpc":', -32700, None, None),
    ("NaN", SEND % b'{"role":"user","messageId":NaN,"parts":[]}', -32700, None, None),
    ("nested past the parser's depth", b"[" * 100_000 + b"]" * 100_000, -32700, None, None),
    ("a batch", b"[]", -32600, None, None),
    ("a bare string", b'"x"', -32600, None, None),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":7,"method":"tasks/get","params":{}}', -32600, 7, None),
    (
        "id a float",
        b'{"jsonrpc":"2.0","id":1.5,"method":"tasks/get","params":{}}',
        -32600,
        None,
        None,
    ),
    ("params a list", _v03("tasks/get", [1]), -32600, 7, None),
    (
        "a member JSON-RPC does not have",
        b'{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"x"},"extra":1}',
        -32600,
        7,
        None,
    ),
    ("an unknown method", _v03("tasks/frobnicate", {}), -32601, 7, None),
    (
        "a lone surrogate",
        SEND % b'{"role":"user","messageId":"m\\ud800","parts":[]}',
        -32602,
        7,
        "params.message.messageId",
    ),
    (
        "a huge integer",
        _v03(
            "message/send",
            {"message": _message(), "configuration": {"historyLength": 1180591620717411303424}},
        ),
        -32602,
        7,
        "params.configuration.historyLength",
    ),
    (
        "no messageId",
        _v03("message/send", {"message": {"role": "user", "parts": []}}),
        -32602,
        7,
        "params.message.messageId",
    ),
]


async def test_malformed_calls_get_client_error_codes_with_fixed_messages(
    node: LocalNode, caplog: pytest.LogCaptureFixture
) -> None:
    token = await _token(node)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with caplog.at_level(logging.DEBUG):
        async with _gateway(node) as gw:
            for what, body, code, rid, field in CASES:
                resp = await gw.post("/a2a/default/echo", content=body, headers=headers)
                assert resp.status_code == 200, (what, resp.text)
                error = resp.json()["error"]
                assert resp.json()["id"] == rid, (what, resp.text)
                assert error["code"] == code, (what, resp.text)
                assert not any(word in error["message"] for word in RAW), (what, resp.text)
                assert error.get("data") == ({"field": field} if field else None), (what, resp.text)
    assert not [rec for rec in caplog.records if rec.exc_info], "a client error logged a traceback"


async def test_a_body_that_is_not_utf8_json_is_415(node: LocalNode) -> None:
    token = await _token(node)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "x"}}
    auth = {"Authorization": f"Bearer {token}"}
    async with _gateway(node) as gw:
        utf16 = await gw.post(
            "/a2a/default/echo",
            content=json.dumps(body).encode("utf-16"),
            headers={**auth, "Content-Type": "application/json"},
        )
        plain = await gw.post(
            "/a2a/default/echo",
            content=json.dumps(body).encode(),
            headers={**auth, "Content-Type": "text/plain"},
        )
        fine = await gw.post("/a2a/default/echo", json=body, headers=auth)
    assert utf16.status_code == 415 and "UTF-8" in utf16.json()["error"]["message"]
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]
    assert fine.status_code == 200 and fine.json()["error"]["code"] == -32001  # no such task


async def test_refusals_on_v03_methods_answer_the_request_id_with_their_status(
    node: LocalNode, tmp_path: Path
) -> None:
    await _deploy(node, tmp_path, "held", {"min": 0, "max": 1})
    await Client.in_process(node.hub).call(r.PauseDeployment, PauseDeploymentRequest(name="held"))
    everywhere, team_a = await _token(node), await _token(node, "team-a")
    send = _v03("message/send", {"message": _message()}, rid="req-1")
    async with _gateway(node) as gw:
        paused = await gw.post(
            "/a2a/default/held", content=send, headers={"Authorization": f"Bearer {everywhere}"}
        )
        paused_stream = await gw.post(
            "/a2a/default/held",
            content=_v03("message/stream", {"message": _message()}, rid="req-2"),
            headers={"Authorization": f"Bearer {everywhere}"},
        )
        unknown = await gw.post(
            "/a2a/default/nobody", content=send, headers={"Authorization": f"Bearer {everywhere}"}
        )
        elsewhere = await gw.post(
            "/a2a/default/echo", content=send, headers={"Authorization": f"Bearer {team_a}"}
        )
        get_elsewhere = await gw.post(
            "/a2a/default/echo",
            content=_v03("tasks/get", {"id": "01ABC"}, rid=9),
            headers={"Authorization": f"Bearer {team_a}"},
        )
        misnamed = await gw.post(  # no deployment can have this name (raw paths like /a2a/../x)
            "/a2a/Team_A/echo", content=send, headers={"Authorization": f"Bearer {everywhere}"}
        )
    assert paused.status_code == 503 and paused.json()["id"] == "req-1"
    assert "paused" in paused.json()["error"]["message"]
    assert paused_stream.status_code == 503 and paused_stream.json()["id"] == "req-2"
    assert unknown.json()["id"] == "req-1" and "nobody" in unknown.json()["error"]["message"]
    assert elsewhere.status_code == 403 and elsewhere.json()["id"] == "req-1"
    assert get_elsewhere.json()["id"] == 9 and "error" in get_elsewhere.json()
    assert misnamed.status_code == 404
    for resp in (paused, paused_stream, unknown, elsewhere, get_elsewhere, misnamed):
        assert not any(word in resp.text for word in RAW), resp.text


async def test_an_unplanned_failure_is_internal_error_with_an_id_the_log_holds(
    node: LocalNode, caplog: pytest.LogCaptureFixture
) -> None:
    token = await _token(node)
    with caplog.at_level(logging.ERROR):
        async with _gateway(node, _FailingLink(node.hub)) as gw:
            resp = await gw.post(
                "/a2a/default/echo",
                content=_v03("message/send", {"message": _message()}),
                headers={"Authorization": f"Bearer {token}"},
            )
    assert resp.status_code == 200 and resp.json()["id"] == 7
    error = resp.json()["error"]
    assert error["code"] == -32603 and "boom" not in resp.text and "/srv" not in resp.text
    found = re.fullmatch(r"internal error ([0-9a-f]{12}): .*", error["message"])
    assert found is not None, error
    mine = [rec for rec in caplog.records if found.group(1) in rec.getMessage()]
    assert len(mine) == 1 and mine[0].exc_info is not None
    assert "boom at /srv/agen/secret/path" in caplog.text
