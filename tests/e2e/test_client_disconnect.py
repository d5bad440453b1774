"""A client that goes away mid-request leaves no traceback in `agen up`'s output."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.e2e.harness import Up, wait_until


def _hang_up_mid_body(up: Up, path: str, token: str) -> None:
    """Send the headers and half the declared body, then close the connection."""
    with socket.create_connection(("127.0.0.1", up.port)) as s:
        s.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            ).encode()
            + b'{"deployment": "x", "input": "'
        )


def test_a_client_that_disconnects_mid_request_prints_no_traceback(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        token = up.local()["token"]
        for path in ("/v1/SubmitTask", "/v1/ListTasks", "/hooks/default/x/y"):
            _hang_up_mid_body(up, path, token)
        # A later request is answered: the Hub read (and dropped) the broken ones first.
        wait_until(lambda: up.http("WhoAmI").status_code == 200, what="the Hub to answer")
        up.stop()
        log = up.log.read_text()
        assert "ClientDisconnect" not in log and "Traceback" not in log, log
    finally:
        up.stop()
