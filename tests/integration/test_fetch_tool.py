"""The built-in fetch tool against a local HTTP server: allowed hosts only (redirects included),
HTML as text, bounded in size and time; off unless builtinTools.fetch names hosts."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from agen.bundle import load_bundle_files
from agen.bundle.checks import permission_warnings
from agen.runner.tooling import build_tooling
from agen.runner.tools.base import ToolError
from agen.runner.tools.fetch import FetchToolset
from agen.store import SQLiteStore
from tests.integration.mcp_helpers import ctx
from tests.unit.bundle_helpers import bundle_files

PAGE = b"""<html><head><style>body{}</style><script>alert('no')</script></head>
<body><h1>Title</h1><p>First &amp; second</p><ul><li>one</li><li>two</li></ul></body></html>"""


class _Site(http.server.BaseHTTPRequestHandler):
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(30)
        port = cast(http.server.HTTPServer, self.server).server_port
        routes: dict[str, tuple[int, str, bytes, dict[str, str]]] = {
            "/page": (200, "text/html; charset=utf-8", PAGE, {}),
            "/big": (200, "text/plain", b"x" * 50_000, {}),
            "/image": (200, "image/png", b"\x89PNG", {}),
            "/to-ip": (
                302,
                "text/plain",
                b"",
                {"Location": f"http://127.0.0.1:{port}/page"},
            ),
            "/to-page": (301, "text/plain", b"", {"Location": "/page"}),
            "/slow": (200, "text/plain", b"late", {}),
        }
        status, kind, body, headers = routes.get(
            self.path, (404, "text/plain", b"no such page", {})
        )
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    _Site.release = threading.Event()  # /slow answers only once the test is over
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}"
    _Site.release.set()
    server.shutdown()
    server.server_close()


def fetch_bundle(**fetch: Any) -> Any:
    config = {"kind": "pool", "builtinTools": {"fetch": {"allow": ["localhost"], **fetch}}}
    return load_bundle_files(bundle_files(config=config))


async def fetch_tool(tmp_path: Path, **fetch: Any) -> Any:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    tooling = build_tooling(fetch_bundle(**fetch), store)
    await store.close()
    [toolset] = [t for t in tooling.toolsets if isinstance(t, FetchToolset)]
    [tool] = await toolset.start()
    return tool


async def test_fetch_returns_an_allowed_pages_text_and_follows_redirects_only_to_allowed_hosts(
    tmp_path: Path, site: str
) -> None:
    tool = await fetch_tool(tmp_path)
    assert tool.name == "fetch" and tool.untrusted_output and tool.read_only
    page = (await tool.call({"url": f"{site}/page"}, ctx())).content
    assert page == f"{site}/page (200, text/html)\n\nTitle\n\nFirst & second\n\none\n\ntwo"
    moved = (await tool.call({"url": f"{site}/to-page"}, ctx())).content
    assert moved.startswith(f"{site}/page (200") and "First & second" in moved
    with pytest.raises(ToolError, match=r"127\.0\.0\.1 is not in builtinTools\.fetch\.allow"):
        await tool.call({"url": f"{site}/to-ip"}, ctx())
    with pytest.raises(ToolError, match=r"is not in builtinTools\.fetch\.allow"):
        await tool.call({"url": site.replace("localhost", "127.0.0.1") + "/page"}, ctx())
    with pytest.raises(ToolError, match="not an http"):
        await tool.call({"url": "file:///etc/passwd"}, ctx())
    with pytest.raises(ToolError, match="image/png, not text"):
        await tool.call({"url": f"{site}/image"}, ctx())
    missing = await tool.call({"url": f"{site}/nope"}, ctx())
    assert missing.is_error and "(404, text/plain)" in missing.content


async def test_fetch_is_bounded_in_size_and_time(tmp_path: Path, site: str) -> None:
    tool = await fetch_tool(tmp_path, maxBytes=1024, timeout="1s")
    big = (await tool.call({"url": f"{site}/big"}, ctx())).content
    assert big.endswith("x" * 1024 + "\n[cut at 1024 bytes]")
    with pytest.raises(ToolError, match="took longer than 1s; it was stopped"):
        await tool.call({"url": f"{site}/slow"}, ctx())


async def test_fetch_is_off_unless_the_bundle_names_hosts_and_rules_know_it(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "agen.db")
    plain = load_bundle_files(bundle_files())
    assert not [t for t in build_tooling(plain, store).toolsets if isinstance(t, FetchToolset)]
    await store.close()
    ask = {"kind": "pool", "permissions": {"ask": ["fetch"]}}
    off = load_bundle_files(bundle_files(config=ask))
    assert any(
        'rule "fetch" matches no tool' in w for w in permission_warnings(off.config, off.mcp)
    )
    on = load_bundle_files(
        bundle_files(config={**ask, "builtinTools": {"fetch": {"allow": ["*.python.org"]}}})
    )
    assert permission_warnings(on.config, on.mcp) == []
