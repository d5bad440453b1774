"""Valid bundles: defaults, preserved unknown fields, raw bytes, secrets, skills, warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.bundle import digest_dir, load_bundle, load_bundle_files, validate_bundle
from agen.bundle.config import MemoryBlock
from agen.bundle.standard import HttpServer, StdioServer
from agen.bundle.triggers import CronTrigger, WebhookTrigger
from agen.errors import BundleError
from tests.unit.bundle_helpers import bundle_files, make_bundle


def test_minimal_bundle_loads_with_documented_defaults(tmp_path: Path) -> None:
    root = make_bundle(tmp_path, config=None)
    bundle = load_bundle(root)
    assert bundle.name == "hello"
    assert bundle.definition_id == f"hello@{digest_dir(root)}"
    assert bundle.system_prompt == "You greet people politely."
    assert bundle.agent.name == "hello"
    h, c = bundle.harness, bundle.config
    assert (h.provider, h.max_output_tokens, h.context_tokens, h.max_retries) == (
        "fake",
        8192,
        64000,
        3,
    )
    assert (h.request_timeout_ms, h.parallel_tool_calls, h.max_tool_result_chars) == (
        120_000,
        True,
        32000,
    )
    assert (c.kind, c.scale.min, c.scale.max, c.scale.max_concurrency, c.idle_timeout_ms) == (
        "pool",
        0,
        1,
        4,
        300_000,
    )
    assert (c.limits.max_turns, c.limits.max_run_duration_ms) == (50, 1_800_000)
    assert c.permissions.default == "ask" and c.budget.cached_input_weight == 0.1
    assert bundle.mcp.mcp_servers == {} and bundle.secrets.secrets == {}
    assert bundle.warnings == ()


def test_task_kind_idles_out_at_once_by_default() -> None:
    bundle = load_bundle_files(bundle_files(config={"kind": "task"}))
    assert bundle.config.idle_timeout_ms == 0


def test_unknown_fields_in_standard_files_round_trip_and_raw_bytes_are_kept() -> None:
    plugin = {
        "name": "hello",
        "$schema": "https://example.com/plugin.json",
        "homepage": "https://x.y",
        "keywords": ["a", "b"],
        "author": {"name": "Ada", "twitter": "@ada"},
    }
    mcp = {
        "mcpServers": {
            "web": {"type": "http", "url": "https://mcp.example.com", "timeoutMs": 5000}
        },
        "vendorExtension": {"x": 1},
    }
    files = bundle_files(plugin=plugin, mcp=mcp)
    files["plugin.json"] = (
        b'{"name":"hello",   "$schema":"https://example.com/plugin.json",\n'
        b'"homepage":"https://x.y","keywords":["a","b"],"author":{"name":"Ada","twitter":"@ada"}}'
    )
    bundle = load_bundle_files(files)
    assert bundle.plugin.model_dump(exclude_none=True) == plugin
    assert bundle.mcp.model_dump()["vendorExtension"] == {"x": 1}
    assert bundle.mcp.model_dump()["mcpServers"]["web"]["timeoutMs"] == 5000
    assert bundle.files["plugin.json"] == files["plugin.json"]  # stored exactly as written
    assert dict(bundle.files) == files


def test_mcp_servers_parse_as_stdio_or_http() -> None:
    mcp = {
        "mcpServers": {
            "workspace": {
                "command": "agen",
                "args": ["mcp", "workspace", "--root", "${WORKSPACE}"],
            },
            "search": {
                "type": "streamable-http",
                "url": "http://127.0.0.1:9000/mcp",
                "headers": {"Authorization": "Bearer ${SEARCH_KEY}"},
            },
        }
    }
    secrets = {"secrets": {"SEARCH_KEY": {"source": "platform", "description": "search API"}}}
    bundle = load_bundle_files(bundle_files(mcp=mcp, secrets=secrets))
    assert isinstance(bundle.mcp.mcp_servers["workspace"], StdioServer)
    assert isinstance(bundle.mcp.mcp_servers["search"], HttpServer)
    assert bundle.secrets.secrets["SEARCH_KEY"].source == "platform"


def test_undeclared_header_secret_is_reported_and_declared_one_passes() -> None:
    mcp = {
        "mcpServers": {
            "s": {"type": "http", "url": "http://h", "headers": {"X-Key": "k-${S_KEY}-${OTHER}"}}
        }
    }
    with pytest.raises(BundleError) as exc:
        load_bundle_files(bundle_files(mcp=mcp, secrets={"secrets": {"S_KEY": {}}}))
    assert exc.value.problems == [
        "mcp.json: mcpServers.s.headers.X-Key: secret ${OTHER} is not declared in x-agen/secrets.json (have: S_KEY)"
    ]
    ok = load_bundle_files(
        bundle_files(mcp=mcp, secrets={"secrets": {"S_KEY": {}, "OTHER": {"env": "OTHER_VAR"}}})
    )
    assert ok.secrets.env_var("OTHER") == "OTHER_VAR" and ok.secrets.env_var("S_KEY") == "S_KEY"


def test_full_config_parses_every_section() -> None:
    config = {
        "kind": "singleton",
        "scale": {"min": 1, "max": 1, "idleTimeout": "1h30m", "reserve": 0},
        "placement": {"labels": {"gpu": "no"}},
        "budget": {"maxUsdPerDay": 5, "labelUsdPerDay": {"team=research": 2.5}},
        "limits": {"maxTurns": 10, "maxRunDuration": "10m", "maxUsdPerRun": 0.5},
        "permissions": {
            "deny": ["shell_*"],
            "ask": [
                {
                    "tool": "send_*",
                    "when": {
                        "trust": "untrusted",
                        "args": {"amount": {"gt": 100}, "to": "*@corp.com"},
                        "time": {"window": "22:00-06:00", "days": ["sat", "sun"]},
                        "rate": {"max": 3, "per": "1h"},
                    },
                }
            ],
            "allow": ["read_*"],
            "default": "deny",
        },
        "triggers": [
            {
                "name": "tick",
                "type": "cron",
                "schedule": "CRON_TZ=Europe/Paris 0 9 * * 1-5",
                "catchUp": True,
                "catchUpWindow": "2h",
                "jitter": "30s",
                "overlap": "skip",
            },
            {"name": "poll", "type": "cron", "schedule": "@every 30s"},
            {
                "name": "hook",
                "type": "webhook",
                "auth": {"type": "hmac", "secret": "HOOK", "encoding": "base64"},
            },
            {
                "name": "lucky",
                "type": "random",
                "count": 3,
                "window": "09:00-17:00",
                "zone": "America/New_York",
            },
            {
                "name": "chain",
                "type": "event",
                "on": {"type": ["task.failed"], "count": 2, "within": "10m"},
            },
        ],
        "workspace": {"mode": "per_conversation", "retain": True},
        "memory": [
            {"block": "notes", "mode": "append"},
            {"url": "https://example.com/a.md", "maxChars": 2000},
        ],
        "tools": {"workspace": {"write_file": {"sideEffect": True, "idempotent": True}}},
        "conversations": {"queueMode": "followup"},
        "admission": {"ratePerMinute": 60, "burst": 10},
        "recordInteractions": True,
    }
    bundle = load_bundle_files(
        bundle_files(config=config, secrets={"secrets": {"HOOK": {"source": "platform"}}})
    )
    c = bundle.config
    assert isinstance(c.triggers[0], CronTrigger) and c.triggers[0].catch_up is True
    assert isinstance(c.triggers[2], WebhookTrigger) and c.triggers[2].auth is not None
    assert isinstance(c.memory[0], MemoryBlock)
    assert c.tools["workspace"]["write_file"].side_effect is True
    assert c.idle_timeout_ms == 5_400_000 and c.record_interactions is True
    assert c.model_dump(by_alias=True, exclude_defaults=True)["permissions"]["deny"] == ["shell_*"]


def test_warnings_flag_likely_mistakes_without_failing() -> None:
    bundle = load_bundle_files(
        bundle_files(
            harness={"provider": "openrouter", "model": "openrouter/auto"},
            config={
                "kind": "task",
                "scale": {"min": 1, "max": 3},
                "permissions": {"default": "allow"},
            },
            files={
                "skills/sum/SKILL.md": "---\nname: summarise\ndescription: Summaries.\n---\nBe brief.\n"
            },
        )
    )
    assert list(bundle.warnings) == [
        'skills/sum/SKILL.md: name: "summarise" differs from its folder name "sum"; preloadSkills and load_skill use the folder name',
        "x-agen/harness.json: apiKeySecret: provider openrouter reads its key from secret OPENROUTER_API_KEY, which is not "
        "declared in x-agen/secrets.json; declare it so the Nest knows to supply it",
        "x-agen/config.json: permissions.default: allow with no deny or ask rules lets the agent call every tool unchecked",
        "x-agen/config.json: scale.min: kind task starts an instance per task, so scale.min 1 keeps idle instances running",
    ]


def test_skills_load_and_preload_by_folder_name() -> None:
    bundle = load_bundle_files(
        bundle_files(
            agent="---\npreloadSkills: [style]\n---\nYou write.\n",
            files={
                "skills/style/SKILL.md": "---\nname: style\ndescription: House style.\n---\nUse short words.\n",
                "skills/style/examples/good.md": "Short.",
                "skills/cite/SKILL.md": "---\nname: cite\ndescription: Cite sources.\nlicense: MIT\n---\nCite.\n",
            },
        )
    )
    assert bundle.agent.preload_skills == ["style"]
    assert bundle.skills["style"].instructions == "Use short words."
    assert bundle.skills["cite"].front_matter.model_dump()["license"] == "MIT"


def test_fake_script_file_in_bundle_is_accepted() -> None:
    script = [
        {
            "toolCalls": [{"name": "finish", "arguments": {"result": "hi"}}],
            "usage": {"inputTokens": 3},
        }
    ]
    bundle = load_bundle_files(
        bundle_files(
            harness={"provider": "fake", "fake": {"script": "./x-agen/script.json"}},
            files={"x-agen/script.json": script},
        )
    )
    assert bundle.harness.fake is not None and bundle.harness.fake.script == "./x-agen/script.json"


def test_validate_bundle_returns_problems_instead_of_raising(tmp_path: Path) -> None:
    bundle, problems, warnings = validate_bundle(make_bundle(tmp_path, plugin={"name": "9lives"}))
    assert bundle is None
    assert problems == [
        "plugin.json: name: must be 1-63 lowercase letters, digits and '-', starting with a letter (got \"9lives\")"
    ]
    assert warnings == []


def test_loading_from_directory_and_from_files_map_agree(tmp_path: Path) -> None:
    files = bundle_files(
        files={"notes/ünïcode.txt": "x", ".git/HEAD": "ref", "x-agen/agent.md~": "old"}
    )
    root = make_bundle(
        tmp_path, files={"notes/ünïcode.txt": "x", ".git/HEAD": "ref", "x-agen/agent.md~": "old"}
    )
    from_dir = load_bundle(root)
    assert ".git/HEAD" not in from_dir.files and "x-agen/agent.md~" not in from_dir.files
    assert from_dir.digest == load_bundle_files(files).digest
    assert json.loads(from_dir.files["plugin.json"]) == {
        "name": "hello",
        "version": "0.1.0",
        "description": "says hello",
    }
