"""Model-facing names of MCP tools are unique: no tool is silently hidden behind another."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agen.errors import InvalidError
from agen.runner.loop import Runner
from agen.runner.permissions import BundlePolicy
from agen.runner.tools.wire_names import by_wire_name
from tests.integration.mcp_helpers import ctx, stdio_toolset
from tests.runner_helpers import make, open_store

NAMED_TOOLS_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("named", log_level="WARNING")
def says(name):
    def tool() -> str:
        return "I am " + name
    return tool

for name in sys.argv[1:]:
    server.add_tool(says(name), name=name, description="says its name")
server.run()
"""


def named_server(tmp_path: Path, server: str, *tools: str):  # type: ignore[no-untyped-def]
    script = tmp_path / "named_server.py"
    script.write_text(NAMED_TOOLS_SERVER)
    return stdio_toolset([str(script), *tools], command=sys.executable, name=server)


async def test_tools_that_joined_names_would_confuse_each_reach_the_model_under_their_own_name(
    tmp_path: Path,
) -> None:
    long_tool = "t" * 70
    a = named_server(tmp_path, "a", "b_c", long_tool, long_tool[:-1] + "u")
    a_b = named_server(tmp_path, "a_b", "c")
    try:
        tools = [*await a.start(), *await a_b.start()]
        named = by_wire_name(tools)  # no collision
        assert len(named) == 4
        assert all(len(w) <= 64 and w.replace("_", "").replace("-", "").isalnum() for w in named)
        assert (
            "a_b_c" in named and named["a_b_c"].name == "a.b_c"
        )  # the plain join where it is unambiguous
        for wire, tool in named.items():  # each name reaches its own tool
            assert (await tool.call({}, ctx())).content == f"I am {tool.name.split('.', 1)[1]}", (
                wire
            )
        # stable: the same tool gets the same name on the next start
        again = named_server(tmp_path, "a_b", "c")
        try:
            assert [t.wire_name for t in await again.start()] == [
                t.wire_name for t in await a_b.start()
            ]
        finally:
            await again.close()
    finally:
        await a.close()
        await a_b.close()


async def test_a_server_tool_named_like_a_builtin_is_refused_at_instance_start_naming_both(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path)
    bundle = make()
    shadow = named_server(tmp_path, "save", "artifact")  # would reach the model as save_artifact
    runner = Runner(
        store,
        bundle,
        owner="test",
        toolsets=[shadow],
        policy=BundlePolicy(bundle.config.permissions),
    )
    try:
        with pytest.raises(InvalidError) as raised:
            await runner.start()
        message = raised.value.message
        assert "'save_artifact'" in message and "MCP server 'save' tool 'artifact'" in message
        assert "built-in tool 'save_artifact'" in message
    finally:
        await runner.close()
        await store.close()


async def test_a_scripted_call_by_bundle_name_reaches_that_tool_not_one_whose_joined_name_matches(
    tmp_path: Path,
) -> None:
    """The fake model's script names tools as the bundle does (server.tool): a_b.c is a_b's tool c,
    never a's tool b_c (whose model-facing name is the plain join a_b_c)."""
    from agen.runner.types import RunRequest
    from tests.runner_helpers import call, script

    store = await open_store(tmp_path)
    bundle = make(
        script(call("a_b.c"), call("a.b_c"), {"text": "done"}),
        {"permissions": {"default": "allow"}},
    )
    runner = Runner(
        store,
        bundle,
        owner="test",
        toolsets=[named_server(tmp_path, "a", "b_c"), named_server(tmp_path, "a_b", "c")],
        policy=BundlePolicy(bundle.config.permissions),
    )
    try:
        result = await runner.run(RunRequest(input="go", deployment="d", task_id="task-1"))
        assert result.status == "succeeded", result.outcome
        said = await store.all("SELECT content FROM messages WHERE role = 'tool' ORDER BY seq")
        assert [r["content"] for r in said] == ["I am c", "I am b_c"]
    finally:
        await runner.close()
        await store.close()
