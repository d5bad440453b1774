"""The shipped bundle templates: each one is a real, valid bundle `agen init` can start from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agen.bundle.loader import validate_bundle
from agen.bundle.templates import (
    TEMPLATE_ORDER,
    HarnessChanges,
    apply_harness_changes,
    candidate_dirs,
    copy_template,
    get_template,
    list_templates,
    templates_dir,
)
from agen.errors import InvalidError

WORKSPACE_SERVER = {"command": "agen", "args": ["mcp", "workspace", "--root", "${WORKSPACE}"]}


def _json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_reference_template_ships_and_nothing_else() -> None:
    names = [t.name for t in list_templates()]
    assert names == list(TEMPLATE_ORDER)


@pytest.mark.parametrize("name", TEMPLATE_ORDER)
def test_template_is_a_valid_bundle_named_after_itself(name: str) -> None:
    template = get_template(name)
    bundle, problems, _warnings = validate_bundle(template.path)
    assert problems == []
    assert bundle is not None
    plugin = _json(template.path / "plugin.json")
    assert plugin["name"] == name
    assert plugin["version"] == "0.1.0"
    assert template.description and template.description == plugin["description"]
    agent = (template.path / "x-agen" / "agent.md").read_text(encoding="utf-8")
    assert "description:" in agent.split("---")[1]
    assert "finish" in agent, "every prompt says when to call finish"
    assert len(agent) > 800, "a purposeful prompt, not a placeholder"


@pytest.mark.parametrize("name", [n for n in TEMPLATE_ORDER if n not in ("hello", "coordinator")])
def test_templates_use_the_auto_provider_so_they_run_offline(name: str) -> None:
    """No model named: auto runs a current model of whichever key is set (auto.MODELS)."""
    harness = _json(get_template(name).path / "x-agen" / "harness.json")
    assert harness["provider"] == "auto"
    assert "model" not in harness


def test_hello_answers_offline_with_a_scripted_friendly_text_turn() -> None:
    harness = _json(get_template("hello").path / "x-agen" / "harness.json")
    assert harness["provider"] == "fake"
    fake = harness["fake"]
    assert isinstance(fake, dict)
    script = fake["script"]
    assert isinstance(script, list) and len(script) == 1
    assert "toolCalls" not in script[0]
    assert script[0]["text"].startswith("Hello!")


def test_coordinator_delegates_to_the_researcher_template_on_a_scripted_model() -> None:
    path = get_template("coordinator").path
    harness: Any = _json(path / "x-agen" / "harness.json")
    assert harness["provider"] == "fake"
    config: Any = _json(path / "x-agen" / "config.json")
    assert [d["name"] for d in config["delegates"]] == ["researcher"]
    script = harness["fake"]["script"]
    assert [c["name"] for c in script[0]["toolCalls"]] == ["start_agent", "start_agent"]


def test_workspace_templates_run_the_builtin_server_in_a_per_task_workspace() -> None:
    users = []
    for template in list_templates():
        mcp_path = template.path / "mcp.json"
        if not mcp_path.is_file():
            continue
        servers = _json(mcp_path)["mcpServers"]
        assert isinstance(servers, dict)
        workspace = servers.get("workspace")
        if workspace is None:
            continue
        users.append(template.name)
        assert workspace["args"][:4] == WORKSPACE_SERVER["args"]
        config = _json(template.path / "x-agen" / "config.json")
        assert config["workspace"]["mode"] == "per_task"  # type: ignore[index]
    assert {"coder", "ci-fixer", "researcher", "incident-responder"} <= set(users)


@pytest.mark.parametrize("name", ["coder", "ci-fixer"])
def test_coding_templates_ask_before_running_shell_commands(name: str) -> None:
    permissions = _json(get_template(name).path / "x-agen" / "config.json")["permissions"]
    assert isinstance(permissions, dict)
    assert "workspace.run" in permissions["ask"]


def test_data_analyst_uses_the_read_only_sql_server_with_a_declared_dsn_secret() -> None:
    path = get_template("data-analyst").path
    server = _json(path / "mcp.json")["mcpServers"]["sql"]  # type: ignore[index]
    assert server["args"] == ["mcp", "sql", "--dsn-env", "AGEN_SQL_DSN"]
    assert "AGEN_SQL_DSN" in _json(path / "x-agen" / "secrets.json")["secrets"]  # type: ignore[operator]
    # it connects to a database the sandbox cannot reach (Postgres over TCP), so it is left out of it
    harness = _json(path / "x-agen" / "harness.json")
    assert harness["sandbox"] == {"servers": {"sql": {"enabled": False}}}


def test_researcher_has_a_daily_budget_and_support_denies_tools_to_untrusted_input() -> None:
    researcher = _json(get_template("researcher").path / "x-agen" / "config.json")
    assert researcher["budget"]["maxUsdPerDay"] > 0  # type: ignore[index]
    support = _json(get_template("support").path / "x-agen" / "config.json")
    deny = support["permissions"]["deny"]  # type: ignore[index]
    assert {"tool": "*.*", "when": {"trustBelow": "trusted"}} in deny
    assert support["triggers"][0]["trust"] == "untrusted"  # type: ignore[index]


@pytest.mark.parametrize("name", ["fleet-steward", "approval-triage"])
def test_hub_templates_ask_before_changing_the_fleet(name: str) -> None:
    permissions = _json(get_template(name).path / "x-agen" / "config.json")["permissions"]
    assert isinstance(permissions, dict)
    assert permissions["ask"] and permissions["default"] == "deny"


def test_templates_dir_is_found_in_the_source_checkout() -> None:
    assert (templates_dir() / "hello" / "plugin.json").is_file()


def test_templates_dir_prefers_a_pyinstaller_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = tmp_path / "agen" / "_bundles"
    (frozen / "hello").mkdir(parents=True)
    (frozen / "hello" / "plugin.json").write_text('{"name": "hello"}', encoding="utf-8")
    monkeypatch.setattr("sys._MEIPASS", str(tmp_path), raising=False)
    assert templates_dir() == frozen


def test_templates_dir_looks_in_the_wheel_layout_before_the_checkout(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "agen"
    assert candidate_dirs(package) == [package / "_bundles", tmp_path / "site-packages" / "bundles"]


def test_unknown_template_names_the_available_ones() -> None:
    with pytest.raises(InvalidError) as info:
        get_template("nope")
    assert "nope" in str(info.value) and "data-analyst" in str(info.value)


def test_copy_skips_editor_litter_and_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    source = tmp_path / "templates"
    (source / "demo" / "__pycache__").mkdir(parents=True)
    (source / "demo" / "plugin.json").write_text(
        '{"name": "demo", "description": "d"}', encoding="utf-8"
    )
    (source / "demo" / "notes.md~").write_text("backup", encoding="utf-8")
    (source / "demo" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    template = get_template("demo", root=source)

    written = copy_template(template, tmp_path / "out")
    assert written == ["plugin.json"]
    with pytest.raises(InvalidError, match="not empty"):
        copy_template(template, tmp_path / "out")


def test_model_with_a_slash_switches_auto_to_openrouter_and_drops_the_fake_script() -> None:
    harness: dict[str, object] = {"provider": "fake", "model": "x", "fake": {"script": []}}
    notes = apply_harness_changes(harness, HarnessChanges(model="typesafe/jev-router"))
    assert harness == {"provider": "openrouter", "model": "typesafe/jev-router"}
    assert notes == ["model: typesafe/jev-router (provider openrouter)"]

    plain: dict[str, object] = {"provider": "auto", "model": "gpt-4o-mini"}
    apply_harness_changes(plain, HarnessChanges(model="llama3.2"))
    assert plain == {"provider": "auto", "model": "llama3.2"}

    direct: dict[str, object] = {"provider": "openai", "model": "gpt-4o"}
    apply_harness_changes(direct, HarnessChanges(model="org/model"))
    assert direct["provider"] == "openai"


def test_fallback_none_clears_the_fallback_models() -> None:
    harness: dict[str, object] = {"provider": "auto", "fallbackModels": ["a"]}
    apply_harness_changes(harness, HarnessChanges(fallback="b, c"))
    assert harness["fallbackModels"] == ["b", "c"]
    apply_harness_changes(harness, HarnessChanges(fallback="none"))
    assert "fallbackModels" not in harness


def test_tiers_are_checked_against_the_tier_names_and_the_routers_top_tier() -> None:
    with pytest.raises(InvalidError, match="--tier"):
        HarnessChanges(tier="huge").check()
    with pytest.raises(InvalidError, match="above --max-tier"):
        HarnessChanges(tier="high", max_tier="low").check()
    harness: dict[str, object] = {"provider": "openrouter", "model": "typesafe/jev-router"}
    with pytest.raises(InvalidError, match="top tier"):
        apply_harness_changes(harness, HarnessChanges(tier="xhigh"))
    apply_harness_changes(harness, HarnessChanges(tier="low", max_tier="high"))
    assert harness["router"] == {"tier": "low", "maxTier": "high"}
