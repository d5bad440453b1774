"""The egress proxy and its allowlist rule, spoken to over its Unix socket as a sandbox's bridge
would: CONNECT tunnels and plain HTTP to allowed hosts, 403 for any other, 400 for what is not a
proxy request; bytes counted both ways."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agen.bundle.sandbox import Sandbox
from agen.sandbox.policy import host_allowed, valid_host_pattern
from agen.sandbox.proxy import Decision, EgressProxy


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("api.github.com", True),
        ("API.GitHub.com.", True),  # case and a trailing dot do not matter
        ("github.com", False),
        ("evil-api.github.com", False),
        ("files.pypi.org", True),
        ("a.b.pypi.org", True),
        ("pypi.org", False),  # *.pypi.org is the hosts under it, not pypi.org itself
        ("pypi.org.evil.com", False),
        ("notpypi.org", False),
        ("127.0.0.1", False),
        ("10.0.0.7", True),
    ],
)
def test_host_allowed_matches_exact_names_and_star_suffixes(host: str, allowed: bool) -> None:
    assert host_allowed(host, ["api.github.com", "*.pypi.org", "10.0.0.7"]) is allowed


@pytest.mark.parametrize(
    "pattern", ["*", "*.com.", "a..b", "http://x.org", "x.org/path", "*x.org", ""]
)
def test_a_pattern_that_is_not_a_host_is_refused_with_the_field(pattern: str) -> None:
    assert not valid_host_pattern(pattern)
    with pytest.raises(ValueError, match="is not a host pattern"):
        Sandbox.model_validate({"network": {"allow": [pattern]}})


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0].decode()
    body = f"upstream saw: {first}".encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[int]:
    server = await asyncio.start_server(_upstream, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


async def exchange(path: str, data: bytes, then: bytes | None = None) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(data)
    if then is not None:
        await reader.readuntil(b"\r\n\r\n")  # the tunnel's 200
        writer.write(then)
    got = await reader.read()
    writer.close()
    return got


async def test_connect_and_plain_http_reach_allowed_hosts_only(upstream: int) -> None:
    seen: list[Decision] = []
    proxy = EgressProxy(("localhost",), seen.append)
    path = await proxy.start()
    try:
        tunnel = await exchange(
            path,
            f"CONNECT localhost:{upstream} HTTP/1.1\r\n\r\n".encode(),
            b"GET /t HTTP/1.1\r\n\r\n",
        )
        assert tunnel.endswith(b"upstream saw: GET /t HTTP/1.1")
        plain = await exchange(
            path,
            f"GET http://localhost:{upstream}/p?q=1 HTTP/1.1\r\nHost: localhost\r\n"
            "Proxy-Connection: keep-alive\r\n\r\n".encode(),
        )
        assert plain.endswith(b"upstream saw: GET /p?q=1 HTTP/1.1")  # origin-form upstream
        denied = await exchange(path, f"CONNECT 127.0.0.1:{upstream} HTTP/1.1\r\n\r\n".encode())
        assert denied.startswith(b"HTTP/1.1 403 Forbidden")
        assert denied.endswith(b"agen sandbox: 127.0.0.1 is not in the sandbox's network.allow\n")
        relative = await exchange(path, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert relative.startswith(b"HTTP/1.1 400 Bad Request")
    finally:
        await proxy.close()
    assert [(d.host, d.method, d.allowed) for d in seen] == [
        ("localhost", "CONNECT", True),
        ("localhost", "GET", True),
        ("127.0.0.1", "CONNECT", False),
    ]
    t = proxy.traffic
    assert (t.allowed, t.denied, t.hosts) == (2, 1, {"localhost": 2})
    assert t.bytes_out > 0 and t.bytes_in >= len(tunnel) + len(plain) - len(
        b"HTTP/1.1 200 Connection established\r\n\r\n"
    )
