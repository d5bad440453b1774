"""Memory blocks (fresh every call, CAS updates, live URLs) and task workspaces."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agen.bundle.config import MemoryBlock, MemoryUrl, Workspace
from agen.runner.memory import MemoryContext, set_block
from agen.runner.tools.base import ToolContext, ToolError
from agen.runner.workspace import TaskWorkspace, release_workspace, workspace_path
from agen.store.base import Store

CTX = ToolContext(namespace="ns", deployment="d", run_id="r", root_run_id="r", conversation_id="c")


async def test_memory_section_is_read_fresh_and_updates_are_compare_and_set(store: Store) -> None:
    mem = MemoryContext(
        store,
        "ns",
        [
            MemoryBlock(block="facts", mode="write"),
            MemoryBlock(block="log", mode="append"),
            MemoryBlock(block="rules", mode="read"),
        ],
    )
    await store.write(lambda tx: set_block(tx, "ns", "rules", "be kind", description="house rules"))
    section = await mem.section()
    assert "## Memory: rules (read, version 1" in section and "house rules\nbe kind" in section
    assert "## Memory: facts (write, version 0, 0/5000 characters)\n(empty)" in section

    [tool] = mem.tools()
    assert tool.input_schema["properties"]["block"]["enum"] == ["facts", "log"]
    await tool.call({"block": "facts", "operation": "replace", "value": "sky is blue"}, CTX)
    # another conversation writes in between; the next render shows it
    await store.write(lambda tx: set_block(tx, "ns", "facts", "sky is blue\ngrass is green"))
    assert "version 2" in await mem.section() and "grass is green" in await mem.section()
    with pytest.raises(ToolError, match="is at version 2, not 1"):
        await tool.call(
            {"block": "facts", "operation": "append", "value": "x", "expectedVersion": 1}, CTX
        )
    result = await tool.call(
        {
            "block": "facts",
            "operation": "str_replace",
            "old": "blue",
            "value": "grey",
            "expectedVersion": 2,
        },
        CTX,
    )
    assert "version 3" in result.content
    with pytest.raises(ToolError, match="append-only"):
        await tool.call({"block": "log", "operation": "replace", "value": "x"}, CTX)
    with pytest.raises(ToolError, match="not attached for writing"):
        await tool.call({"block": "rules", "operation": "replace", "value": "x"}, CTX)
    await tool.call({"block": "log", "operation": "append", "value": "first"}, CTX)
    section = await mem.section()
    assert "sky is grey" in section and "first" in section


async def test_read_only_attachments_get_no_update_tool(store: Store) -> None:
    assert MemoryContext(store, "ns", [MemoryBlock(block="a", mode="read")]).tools() == []


@pytest.fixture
def page_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/status"
            self.send_response(200 if ok else 500)
            self.end_headers()
            self.wfile.write(b"all systems nominal " * 50 if ok else b"boom")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


async def test_live_urls_are_fetched_capped_and_left_out_on_failure(
    store: Store, page_server: str
) -> None:
    mem = MemoryContext(
        store,
        "ns",
        [
            MemoryUrl(url=f"{page_server}/status", max_chars=40),
            MemoryUrl(url=f"{page_server}/broken"),
            MemoryUrl(url="http://127.0.0.1:9/unreachable", timeout_seconds=0.5),
        ],
    )
    section = await mem.section()
    assert section.startswith(f"## Live: {page_server}/status\nall systems nominal")
    assert "[cut at 40 characters]" in section
    assert "broken" not in section and "unreachable" not in section
    assert mem.tools() == []


def test_workspace_paths_per_task_conversation_and_shared(tmp_path: Path) -> None:
    common: dict[str, Any] = {
        "namespace": "ns",
        "deployment": "dep",
        "run_id": "run-1",
        "root": tmp_path,
    }
    assert (
        workspace_path("per_task", task_id="t1", conversation_key=None, **common)
        == tmp_path / "ns/dep/tasks/t1"
    )
    assert (
        workspace_path("per_task", task_id=None, conversation_key=None, **common)
        == tmp_path / "ns/dep/tasks/run-1"
    )
    conv = workspace_path("per_conversation", task_id="t1", conversation_key="api:a/b", **common)
    assert conv.parent == tmp_path / "ns/dep/conversations" and "/" not in conv.name
    assert (
        workspace_path("shared", task_id="t1", conversation_key=None, **common)
        == tmp_path / "ns/dep/shared"
    )


def test_per_task_workspace_is_removed_unless_retained_and_failures_never_raise(
    tmp_path: Path,
) -> None:
    d = tmp_path / "w"
    d.mkdir()
    release_workspace(TaskWorkspace(str(d), "per_task", remove_at_end=False))
    assert d.exists()
    release_workspace(TaskWorkspace(str(d), "per_task", remove_at_end=True))
    assert not d.exists()
    release_workspace(TaskWorkspace(str(d), "per_task", remove_at_end=True))  # already gone: fine
    assert Workspace().mode == "per_task"
