"""`deploy --validate` refuses malformed permission rules, URLs and special files; warns on rules that match no tool."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from agen.bundle import load_bundle_files
from agen.bundle.checks import BUILTIN_TOOLS
from agen.errors import BundleError
from tests.cli_helpers import run_agen
from tests.unit.bundle_helpers import bundle_files, make_bundle

WORKSPACE = {
    "mcpServers": {"workspace": {"command": "python3", "args": ["my_workspace_server.py"]}}
}
"""A third-party server: its tools are only known once it starts, so any tool under it may exist."""


def problems(**short: Any) -> list[str]:
    with pytest.raises(BundleError) as e:
        load_bundle_files(bundle_files(**short))
    return list(e.value.problems)


def test_empty_and_malformed_permission_rules_are_errors() -> None:
    assert problems(
        config={"permissions": {"deny": ["", "work[space.*"], "ask": [{"tool": " "}]}}
    ) == [
        "x-agen/config.json: permissions.deny[0]: must name a tool: a name like workspace.read"
        " or a glob like workspace.*",
        'x-agen/config.json: permissions.deny[1]: "work[space.*" opens a "[" character class at position 5'
        " that is never closed",
        "x-agen/config.json: permissions.ask[0].tool: must name a tool: a name like workspace.read"
        " or a glob like workspace.*",
    ]


def test_a_rule_for_an_undeclared_server_warns_naming_the_closest_tool() -> None:
    bundle = load_bundle_files(
        bundle_files(
            mcp=WORKSPACE,
            config={
                "permissions": {
                    "deny": ["workspce.run"],
                    "ask": [{"tool": "finsh"}],
                    "allow": [
                        "workspace.*",
                        "workspace_read_*",
                        "workspace.any_tool",
                        "finish",
                        "*",
                        "memory_*",
                    ],
                }
            },
        )
    )
    assert list(bundle.warnings) == [
        'x-agen/config.json: permissions.deny[0]: rule "workspce.run" matches no tool: no MCP server "workspce"'
        " in mcp.json; did you mean workspace.*?",
        'x-agen/config.json: permissions.ask[0].tool: rule "finsh" matches no tool: it matches no built-in tool'
        " or server of this bundle; did you mean finish?",
    ]


def test_a_rule_for_a_delegation_tool_warns_only_without_delegates() -> None:
    rules = {"permissions": {"allow": ["start_agent", "query_agent"], "ask": ["acquire_lock"]}}
    delegating = load_bundle_files(
        bundle_files(config={**rules, "delegates": [{"name": "researcher"}]})
    )
    assert list(delegating.warnings) == []
    alone = load_bundle_files(bundle_files(config=rules))
    assert [w.split(": rule ")[1].split(" matches")[0] for w in alone.warnings] == [
        '"start_agent"',
        '"query_agent"',
    ]


def test_delegation_tool_names_the_validator_knows_are_the_runners() -> None:
    from agen.bundle.checks import DELEGATION_TOOLS, LOCK_TOOLS
    from agen.bundle.config import Config
    from agen.runner.tools.delegate import delegation_tools

    class Port:
        pass

    config = Config.model_validate({"delegates": [{"name": "w"}]})
    names = [t.name for t in delegation_tools(config, Port(), None)]  # type: ignore[arg-type]
    assert names == [*DELEGATION_TOOLS, *LOCK_TOOLS]


def test_builtin_tool_names_the_validator_knows_are_the_runners() -> None:
    from agen.runner.memory import MemoryUpdateTool
    from agen.runner.tools import builtin

    names = {
        cls.name
        for cls in (
            builtin.FinishTool,
            builtin.ReportProgressTool,
            builtin.SaveArtifactTool,
            builtin.ReadArtifactTool,
            builtin.LoadSkillTool,
            MemoryUpdateTool,
        )
    }
    assert names == set(BUILTIN_TOOLS)


@pytest.mark.parametrize(
    "url", ["not a url", "ftp://example.com/x", "http://", "https://host:port/"]
)
def test_http_mcp_server_url_must_be_an_http_url(url: str) -> None:
    assert problems(mcp={"mcpServers": {"api": {"type": "http", "url": url}}}) == [
        f'mcp.json: mcpServers.api.url: must be an http:// or https:// URL with a host (got "{url}")'
    ]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "s3://bucket/notes.md", "notes.md"])
def test_memory_url_with_an_unsupported_scheme_is_an_error(url: str) -> None:
    assert problems(config={"memory": [{"url": url}]}) == [
        f'x-agen/config.json: memory[0].url: must be an http:// or https:// URL with a host (got "{url}")'
    ]


def test_valid_urls_pass() -> None:
    bundle = load_bundle_files(
        bundle_files(
            mcp={"mcpServers": {"api": {"type": "http", "url": "http://127.0.0.1:7070/mcp"}}},
            config={"memory": [{"url": "https://example.com/a.md"}]},
        )
    )
    assert bundle.warnings == ()


def test_validate_refuses_a_fifo_in_the_bundle_instead_of_skipping_or_blocking(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_bundle(tmp_path)
    os.mkfifo(root / "skills.pipe")
    code, out, err = run_agen(capsys, "deploy", str(root), "--validate")
    assert code == 2 and out == ""
    assert "skills.pipe: (file): is a FIFO (named pipe), not a regular file" in err


def test_validate_refuses_a_socket_in_the_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path)
    short = Path(f"/tmp/agen-sock-{os.getpid()}")  # AF_UNIX paths are short; link it in
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(short))
        os.replace(short, root / "x-agen" / "agent.sock")
        code, _, err = run_agen(capsys, "deploy", str(root), "--validate")
    finally:
        sock.close()
    assert code == 2
    assert "x-agen/agent.sock: (file): is a socket, not a regular file" in err


def test_a_rule_naming_a_tool_agens_own_server_lacks_warns_with_the_real_tool() -> None:
    mcp = {
        "mcpServers": {
            "workspace": {"command": "agen", "args": ["mcp", "workspace", "--root", "w"]},
            "sql": {"command": "agen", "args": ["mcp", "sql"]},
        }
    }
    bundle = load_bundle_files(
        bundle_files(
            mcp=mcp,
            config={
                "permissions": {
                    "deny": ["workspace.run_shell"],
                    "allow": ["workspace.run", "workspace_read", "workspace.*", "sql.query", "*.*"],
                }
            },
        )
    )
    assert list(bundle.warnings) == [
        'x-agen/config.json: permissions.deny[0]: rule "workspace.run_shell" matches no tool: server "workspace"'
        " is agen's own and has no such tool; did you mean workspace.run?"
    ]


def test_a_rule_naming_run_of_a_workspace_served_without_run_warns() -> None:
    """`agen mcp workspace --no-run` serves read but no run: the validator knows the same tools."""
    mcp = {
        "mcpServers": {
            "workspace": {
                "command": "agen",
                "args": ["mcp", "workspace", "--root", "w", "--no-run"],
            }
        }
    }
    config = {"permissions": {"ask": ["workspace.run"], "allow": ["workspace.read"]}}
    bundle = load_bundle_files(bundle_files(mcp=mcp, config=config))
    assert list(bundle.warnings) == [
        'x-agen/config.json: permissions.ask[0]: rule "workspace.run" matches no tool: server "workspace"'
        " is agen's own and has no such tool; did you mean workspace.read?"
    ]


async def test_builtin_server_tool_names_the_validator_knows_are_the_servers(
    tmp_path: Path,
) -> None:
    import sqlite3

    from agen.bundle.checks import BUILTIN_SERVER_TOOLS, builtin_server_tools
    from agen.mcpservers import sql, workspace

    sqlite3.connect(tmp_path / "db.sqlite").close()
    servers = {
        "workspace": workspace.build_server(str(tmp_path)),
        "sql": sql.build_server(sql.open_database(str(tmp_path / "db.sqlite"))),
    }
    for name, server in servers.items():
        assert {t.name for t in await server.list_tools()} == set(BUILTIN_SERVER_TOOLS[name]), name
    no_run = workspace.build_server(str(tmp_path), allow_run=False)
    assert {t.name for t in await no_run.list_tools()} == set(
        builtin_server_tools(["mcp", "workspace", "--root", str(tmp_path), "--no-run"]) or ()
    )


def test_rules_naming_the_builtin_workspace_tools_match_them() -> None:
    """With no workspace server the built-in workspace tools are on: their names match, a typo warns."""
    config: dict[str, Any] = {
        "permissions": {"ask": ["workspace.run"], "allow": ["workspace_read", "workspace.*"]}
    }
    assert list(load_bundle_files(bundle_files(config=config)).warnings) == []
    config = {
        "builtinTools": {"workspace": {"run": False}},
        "permissions": {"ask": ["workspace.run"], "allow": ["workspace.read"]},
    }
    assert list(load_bundle_files(bundle_files(config=config)).warnings) == [
        'x-agen/config.json: permissions.ask[0]: rule "workspace.run" matches no tool: the built-in'
        " workspace tools (builtinTools.workspace) have no such tool; did you mean workspace.read?"
    ]
    config = {"builtinTools": {"workspace": False}, "permissions": {"allow": ["workspace.read"]}}
    [warning] = load_bundle_files(bundle_files(config=config)).warnings
    assert 'rule "workspace.read" matches no tool: no MCP server "workspace" in mcp.json' in warning


def test_the_builtin_workspace_tools_default_off_beside_a_workspace_server() -> None:
    from agen.bundle.checks import workspace_builtins

    def tools(mcp: dict[str, Any], config: dict[str, Any] | None = None) -> tuple[str, ...]:
        b = load_bundle_files(bundle_files(mcp={"mcpServers": mcp}, config=config or {}))
        return workspace_builtins(b.config, b.mcp)

    every = ("read", "write", "edit", "glob", "grep", "run")
    assert tools({}) == every
    assert tools({}, {"builtinTools": {"workspace": {"run": False}}}) == every[:-1]
    assert tools({}, {"builtinTools": {"workspace": False}}) == ()
    files = {"command": "agen", "args": ["mcp", "workspace", "--root", "${WORKSPACE}"]}
    assert tools({"files": files}) == ()  # agen's workspace server under another name
    assert tools(WORKSPACE["mcpServers"]) == ()  # a third-party server named workspace
    assert tools({"files": files}, {"builtinTools": {"workspace": True}}) == every
    assert tools({"other": {"command": "python3", "args": ["srv.py"]}}) == every


def test_builtin_workspace_tools_beside_a_server_named_workspace_are_an_error() -> None:
    assert problems(mcp=WORKSPACE, config={"builtinTools": {"workspace": True}}) == [
        'x-agen/config.json: builtinTools.workspace: the built-in workspace tools and the mcp.json server "workspace"'
        " would both be named workspace_*; set builtinTools.workspace to false to use the server,"
        " or rename the server"
    ]


async def test_builtin_workspace_tool_names_the_validator_knows_are_the_runners(
    tmp_path: Path,
) -> None:
    from agen.bundle.checks import BUILTIN_SERVER_TOOLS
    from agen.runner.tools.workspace import WorkspaceToolset

    every = BUILTIN_SERVER_TOOLS["workspace"]
    started = await WorkspaceToolset(str(tmp_path), every).start()
    assert {(t.name, t.wire_name) for t in started} == {
        (f"workspace.{t}", f"workspace_{t}") for t in every
    }
    assert {t.name for t in started if t.side_effect} == {
        "workspace.write",
        "workspace.edit",
        "workspace.run",
    }


async def test_builtin_workspace_tools_take_config_tool_hints_like_mcp_tools(
    tmp_path: Path,
) -> None:
    """run's output is untrusted by default (agen mcp workspace marks it open-world); config.json
    ``tools.workspace`` hints override the defaults, as they do for a server's tools."""
    from agen.runner.tools.workspace import WorkspaceToolset

    b = load_bundle_files(
        bundle_files(
            config={
                "tools": {
                    "workspace": {"run": {"untrustedOutput": False}, "write": {"idempotent": True}}
                }
            }
        )
    )
    plain = {t.name: t for t in await WorkspaceToolset(str(tmp_path), ("run", "write")).start()}
    assert plain["workspace.run"].untrusted_output and not plain["workspace.write"].idempotent
    hinted = await WorkspaceToolset(
        str(tmp_path), ("run", "write"), b.config.tools["workspace"]
    ).start()
    assert [(t.untrusted_output, t.idempotent) for t in hinted] == [(False, False), (False, True)]
