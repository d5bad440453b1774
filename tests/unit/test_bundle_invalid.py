"""Invalid bundles: each reports the precise problem line a user would see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agen.bundle import load_bundle, load_bundle_files
from agen.errors import BundleError
from tests.unit.bundle_helpers import bundle_files, make_bundle

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "scale max below min",
        {"config": {"scale": {"min": 1, "max": 0}}},
        ["x-agen/config.json: scale.max: must be ≥ scale.min (got 0 < 1)"],
    ),
    (
        "unknown provider",
        {"harness": {"provider": "gpt"}},
        [
            'x-agen/harness.json: provider: must be one of auto, anthropic, openai, gemini, openrouter, fake, replay (got "gpt")'
        ],
    ),
    (
        "no model call allowed in flight",
        {"harness": {"provider": "fake", "maxInFlight": 0}},
        ["x-agen/harness.json: maxInFlight: must be ≥ 1 (got 0)"],
    ),
    (
        "unknown field in x-agen permissions",
        {"config": {"permissions": {"bogus": True}}},
        ["x-agen/config.json: permissions.bogus: unknown field"],
    ),
    (
        "empty system prompt",
        {"agent": "---\nname: hello\n---\n\n   \n"},
        ["x-agen/agent.md: body: the system prompt is empty"],
    ),
    (
        "plugin without a name",
        {"plugin": {"version": "1.0.0"}},
        ["plugin.json: name: required"],
    ),
    (
        "config is not JSON",
        {"config": '{\n  "kind": "pool"\n    "scale": {}\n}'},
        ["x-agen/config.json: (file): not valid JSON: Expecting ',' delimiter at line 3 column 5"],
    ),
    (
        "missing harness",
        {"harness": None},
        ["x-agen/harness.json: (file): missing; every bundle needs one (see agen init)"],
    ),
    (
        "bad cron schedule",
        {
            "config": {
                "triggers": [
                    {"name": "ok", "type": "cron", "schedule": "@hourly"},
                    {"name": "nightly", "type": "cron", "schedule": "0 25 * * *"},
                ]
            }
        },
        [
            'x-agen/config.json: triggers[1].schedule: "0 25 * * *" is not a valid cron expression: bad hour'
        ],
    ),
    (
        "bad CRON_TZ zone",
        {
            "config": {
                "triggers": [
                    {"name": "paris", "type": "cron", "schedule": "CRON_TZ=Europe/Lyon 0 9 * * *"}
                ]
            }
        },
        [
            'x-agen/config.json: triggers[0].schedule: unknown time zone "Europe/Lyon"; use an IANA name like Europe/Paris or UTC'
        ],
    ),
    (
        "duplicate trigger names",
        {
            "config": {
                "triggers": [
                    {"name": "hook", "type": "webhook"},
                    {"name": "hook", "type": "webhook"},
                ]
            }
        },
        ['x-agen/config.json: triggers[1].name: duplicate trigger name "hook"'],
    ),
    (
        "unknown trigger type",
        {"config": {"triggers": [{"name": "x", "type": "sms"}]}},
        [
            'x-agen/config.json: triggers[0].type: must be one of cron, random, webhook, event (got "sms")'
        ],
    ),
    (
        "singleton scaled past one",
        {"config": {"kind": "singleton", "scale": {"max": 3}}},
        ["x-agen/config.json: scale.max: must be ≤ 1 for kind singleton (got 3)"],
    ),
    (
        "bad duration",
        {"config": {"limits": {"maxRunDuration": "5 minutes"}}},
        [
            'x-agen/config.json: limits.maxRunDuration: "5 minutes" is not a duration; use forms like 250ms, 30s, 5m, 1h30m or 720h'
        ],
    ),
    (
        "bad permission time window",
        {
            "config": {
                "permissions": {
                    "ask": [{"tool": "shell_*", "when": {"time": {"window": "9:00-17:00"}}}]
                }
            }
        },
        [
            'x-agen/config.json: permissions.ask[0].when.time.window: must be "HH:MM-HH:MM" in 24-hour time, e.g. "09:00-17:30" (got "9:00-17:00")'
        ],
    ),
    (
        "undeclared secret in mcp env",
        {
            "mcp": {
                "mcpServers": {"github": {"command": "gh-mcp", "env": {"TOKEN": "${GITHUB_TOKEN}"}}}
            }
        },
        [
            "mcp.json: mcpServers.github.env.TOKEN: secret ${GITHUB_TOKEN} is not declared in x-agen/secrets.json (have: none declared)"
        ],
    ),
    (
        "undeclared apiKeySecret",
        {
            "harness": {"provider": "openai", "model": "gpt-4o-mini", "apiKeySecret": "MY_KEY"},
            "secrets": {"secrets": {"OTHER": {"source": "env"}}},
        },
        [
            "x-agen/harness.json: apiKeySecret: secret MY_KEY is not declared in x-agen/secrets.json (have: OTHER)"
        ],
    ),
    (
        "preload of a missing skill",
        {"agent": "---\npreloadSkills: [summarise]\n---\nYou help.\n"},
        ['x-agen/agent.md: preloadSkills[0]: no skill "summarise" under skills/ (have: none)'],
    ),
    (
        "fake script escapes the bundle",
        {"harness": {"provider": "fake", "fake": {"script": "../outside.json"}}},
        [
            'x-agen/harness.json: fake.script: "../outside.json" must be a relative path inside the bundle'
        ],
    ),
    (
        "cassette missing",
        {"harness": {"provider": "replay", "cassette": "x-agen/cassette.json"}},
        ['x-agen/harness.json: cassette: "x-agen/cassette.json" does not exist in the bundle'],
    ),
    (
        "openai without a model",
        {"harness": {"provider": "openai"}, "secrets": {"secrets": {"OPENAI_API_KEY": {}}}},
        ["x-agen/harness.json: model: required for provider openai"],
    ),
    (
        "bad bundle name",
        {"plugin": {"name": "Hello World"}},
        [
            "plugin.json: name: must be 1-63 lowercase letters, digits and '-', starting with a letter (got \"Hello World\")"
        ],
    ),
    (
        "wrong type",
        {"config": {"limits": {"maxTurns": "50"}}},
        ["x-agen/config.json: limits.maxTurns: must be an integer (got a string)"],
    ),
    (
        "agent front matter not YAML",
        {"agent": "---\nname: [unclosed\n---\nYou help.\n"},
        [
            "x-agen/agent.md: front matter: front matter is not valid YAML at line 3: expected ',' or ']', but got '<stream end>'"
        ],
    ),
    (
        "skill folder without SKILL.md",
        {"files": {"skills/notes/README.md": "hi"}},
        ["skills/notes/SKILL.md: (file): missing; every folder under skills/ needs a SKILL.md"],
    ),
    (
        "hmac secret undeclared",
        {
            "config": {
                "triggers": [
                    {"name": "gh", "type": "webhook", "auth": {"type": "hmac", "secret": "GH_HOOK"}}
                ]
            }
        },
        [
            "x-agen/config.json: triggers[0].auth.secret: secret GH_HOOK is not declared in x-agen/secrets.json (have: none declared)"
        ],
    ),
    (
        "fake script file with a bad turn",
        {
            "harness": {"provider": "fake", "fake": {"script": "x-agen/script.json"}},
            "files": {"x-agen/script.json": [{"text": "hi"}, {"usage": {"inputTokens": 1}}]},
        },
        ['x-agen/script.json: [1]: a turn needs "text" or "toolCalls"'],
    ),
]


@pytest.mark.parametrize(
    ("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_bundle_reports_precise_problem(
    overrides: dict[str, Any], expected: list[str]
) -> None:
    with pytest.raises(BundleError) as exc:
        load_bundle_files(bundle_files(**overrides))
    assert exc.value.problems == expected


def test_bundle_with_several_problems_reports_all_of_them_at_once(tmp_path: Path) -> None:
    root = make_bundle(
        tmp_path,
        plugin={"description": "no name"},
        harness={"provider": "gpt", "maxOutputTokens": 0},
        config={
            "scale": {"min": 2, "max": 1},
            "kind": "daemon",
            "workspace": {"mode": "per_task", "size": 1},
        },
        agent="---\nname: x\n---\n",
        secrets={"secrets": {"lower": {"source": "env"}}},
    )
    with pytest.raises(BundleError) as exc:
        load_bundle(root)
    assert exc.value.problems == [
        "plugin.json: name: required",
        'x-agen/harness.json: provider: must be one of auto, anthropic, openai, gemini, openrouter, fake, replay (got "gpt")',
        "x-agen/harness.json: maxOutputTokens: must be ≥ 1 (got 0)",
        'x-agen/config.json: kind: must be one of singleton, pool, task (got "daemon")',
        "x-agen/config.json: scale.max: must be ≥ scale.min (got 1 < 2)",
        "x-agen/config.json: workspace.size: unknown field",
        'x-agen/secrets.json: secrets.lower: must be a secret name like OPENAI_API_KEY: A-Z, 0-9 and _, starting with a letter (got "lower")',
        "x-agen/agent.md: body: the system prompt is empty",
    ]
    assert str(root) in exc.value.message and "8 problems" in exc.value.message


def test_unknown_field_in_x_agen_file_is_rejected() -> None:
    with pytest.raises(BundleError) as exc:
        load_bundle_files(bundle_files(harness={"provider": "fake", "modle": "x"}))
    assert exc.value.problems == ["x-agen/harness.json: modle: unknown field"]


def test_non_utf8_file_is_reported() -> None:
    with pytest.raises(BundleError) as exc:
        load_bundle_files(bundle_files(agent=b"\xff\xfe system"))
    assert exc.value.problems == ["x-agen/agent.md: (file): not valid UTF-8 (byte 0)"]


def test_json_file_that_is_not_an_object_is_reported() -> None:
    with pytest.raises(BundleError) as exc:
        load_bundle_files(bundle_files(config=["pool"]))
    assert exc.value.problems == ["x-agen/config.json: (file): must be an object (got a list)"]
