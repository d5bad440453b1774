"""A real `agen up`'s log while callers make mistakes over A2A: each malformed or refused call is at
most one line, never a traceback (a2a-sdk's "Unhandled exception" or our own), and an SSE client
that hangs up mid-stream adds no flood of "socket.send() raised exception."."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx

from tests.e2e.harness import Up
from tests.fleet_helpers import write_bundle
from tests.integration.test_a2a_gateway_errors import CASES


def _send(text: str, mid: str, method: str = "message/send", rid: int = 1) -> dict[str, object]:
    message = {"role": "user", "messageId": mid, "parts": [{"kind": "text", "text": text}]}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"message": message}}


def test_client_errors_over_a2a_leave_no_traceback_in_agen_ups_log(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        gateway = up.wait_gateway()
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        up.agen("deploy", str(write_bundle(tmp_path / "held", "held")))
        up.agen("stop", "held")
        token = up.local()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        json_auth = {**auth, "Content-Type": "application/json"}
        before = up.log.read_text()
        url = f"{gateway}/a2a/default/echo"
        with httpx.Client(timeout=60) as c:
            for _, body, *_ in CASES:  # malformed bodies of every kind
                assert c.post(url, content=body, headers=json_auth).status_code == 200
            no_id = {"jsonrpc": "2.0", "id": 2, "method": "message/send"}
            no_id["params"] = {
                "message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}
            }
            assert c.post(url, json=no_id, headers=auth).json()["error"]["code"] == -32602
            push = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/pushNotificationConfig/set",
                "params": {"taskId": "t", "pushNotificationConfig": {"url": "http://x.test"}},
            }
            assert "error" in c.post(url, json=push, headers=auth).json()
            paused = c.post(f"{gateway}/a2a/default/held", json=_send("hi", "m1"), headers=auth)
            assert paused.status_code == 503 and paused.json()["id"] == 1
            utf16 = json.dumps(_send("hi", "m2")).encode("utf-16")
            assert c.post(url, content=utf16, headers=json_auth).status_code == 415
            assert c.post(url, json=_send("hi", "m3"), headers=auth).json()["result"]
        # A streaming call whose client reads the first bytes and hangs up.
        host, port = gateway.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as s:
            body = json.dumps(_send("stream me", "m4", "message/stream")).encode()
            s.sendall(
                b"POST /a2a/default/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            s.recv(100)
        # the last call answered after the others: what they logged is in the file by now
        assert c.is_closed
        with httpx.Client(timeout=60) as c:
            assert c.post(url, json=_send("last", "m5"), headers=auth).json()["result"]
        log = up.log.read_text()[len(before) :]
    finally:
        up.stop()
    assert "Traceback" not in log, log[-5000:]
    assert "Unhandled exception" not in log, log[-5000:]
    assert log.count("socket.send() raised exception.") <= 1, log[-5000:]
    assert len(log.splitlines()) <= len(CASES) + 10, log  # at most one line per refused call
