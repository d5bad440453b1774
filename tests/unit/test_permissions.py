"""Permission rules: deny → ask → allow, first match wins, every `when` condition, durable rate."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agen.bundle.overrides import TaskOverrides
from agen.bundle.permissions import Permissions
from agen.runner.permissions import BundlePolicy
from agen.runner.tools.base import Tool, ToolContext, ToolResult
from agen.store.sqlite import SQLiteStore


class FakeTool(Tool):
    def __init__(self, name: str, bypass: bool = False) -> None:
        self.name = name
        self.input_schema = {"type": "object"}
        self.bypass_permissions = bypass

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


def ctx(trust: str = "trusted", labels: dict[str, str] | None = None) -> ToolContext:
    return ToolContext(
        namespace="ns",
        deployment="dep",
        run_id="r",
        root_run_id="r",
        conversation_id="c",
        trust=trust,
        labels=labels or {},
    )


# Wednesday 2026-11-25 10:30 UTC, and Thursday 01:00 UTC (inside a window that wrapped from Wednesday)
WED_1030 = int(datetime(2026, 11, 25, 10, 30, tzinfo=UTC).timestamp() * 1000)
THU_0100 = int(datetime(2026, 11, 26, 1, 0, tzinfo=UTC).timestamp() * 1000)

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any], dict[str, Any], str]] = [
    # (case, permissions, tool, call args, context (trust/labels/now), expected decision)
    ("default is ask", {}, "fs.read", {}, {}, "ask"),
    ("default can be allow", {"default": "allow"}, "fs.read", {}, {}, "allow"),
    ("deny beats allow", {"deny": ["fs.*"], "allow": ["fs.read"]}, "fs.read", {}, {}, "deny"),
    ("ask beats allow", {"ask": ["fs.write"], "allow": ["fs.*"]}, "fs.write", {}, {}, "ask"),
    ("wire name matches", {"allow": ["fs_read"]}, "fs.read", {}, {}, "allow"),
    ("glob on registered name", {"allow": ["fs.r*"]}, "fs.read", {}, {}, "allow"),
    (
        "trust equals",
        {"allow": [{"tool": "*", "when": {"trust": "operator"}}]},
        "x.y",
        {},
        {"trust": "operator"},
        "allow",
    ),
    (
        "trust differs",
        {"allow": [{"tool": "*", "when": {"trust": "operator"}}]},
        "x.y",
        {},
        {},
        "ask",
    ),
    (
        "trustBelow holds",
        {"deny": [{"tool": "*", "when": {"trustBelow": "trusted"}}], "default": "allow"},
        "x.y",
        {},
        {"trust": "untrusted"},
        "deny",
    ),
    (
        "trustBelow fails",
        {"deny": [{"tool": "*", "when": {"trustBelow": "trusted"}}], "default": "allow"},
        "x.y",
        {},
        {"trust": "trusted"},
        "allow",
    ),
    (
        "args glob",
        {"allow": [{"tool": "git.push", "when": {"args": {"branch": "feature/*"}}}]},
        "git.push",
        {"branch": "feature/a"},
        {},
        "allow",
    ),
    (
        "args glob misses",
        {"allow": [{"tool": "git.push", "when": {"args": {"branch": "feature/*"}}}]},
        "git.push",
        {"branch": "main"},
        {},
        "ask",
    ),
    (
        "args numeric",
        {"allow": [{"tool": "pay.send", "when": {"args": {"amount": {"gt": 0, "lte": 100}}}}]},
        "pay.send",
        {"amount": 100},
        {},
        "allow",
    ),
    (
        "args numeric over",
        {"allow": [{"tool": "pay.send", "when": {"args": {"amount": {"lte": 100}}}}]},
        "pay.send",
        {"amount": 100.5},
        {},
        "ask",
    ),
    (
        "args numeric rejects strings",
        {"allow": [{"tool": "pay.send", "when": {"args": {"amount": {"lt": 5}}}}]},
        "pay.send",
        {"amount": "1"},
        {},
        "ask",
    ),
    (
        "args exact",
        {"deny": [{"tool": "db.q", "when": {"args": {"dry": False}}}], "default": "allow"},
        "db.q",
        {"dry": False},
        {},
        "deny",
    ),
    (
        "args exact bool is not int",
        {"deny": [{"tool": "db.q", "when": {"args": {"n": 1}}}], "default": "allow"},
        "db.q",
        {"n": True},
        {},
        "allow",
    ),
    (
        "omitted arg never matches",
        {"allow": [{"tool": "git.push", "when": {"args": {"branch": "*"}}}]},
        "git.push",
        {},
        {},
        "ask",
    ),
    (
        "labels equal",
        {"allow": [{"tool": "*", "when": {"labels": {"team": "ops"}}}]},
        "x.y",
        {},
        {"labels": {"team": "ops", "env": "dev"}},
        "allow",
    ),
    (
        "labels differ",
        {"allow": [{"tool": "*", "when": {"labels": {"team": "ops"}}}]},
        "x.y",
        {},
        {"labels": {"team": "dev"}},
        "ask",
    ),
    (
        "time inside window",
        {"allow": [{"tool": "*", "when": {"time": {"window": "09:00-17:00"}}}]},
        "x.y",
        {},
        {"now": WED_1030},
        "allow",
    ),
    (
        "time outside window",
        {"allow": [{"tool": "*", "when": {"time": {"window": "11:00-17:00"}}}]},
        "x.y",
        {},
        {"now": WED_1030},
        "ask",
    ),
    (
        "time on listed day",
        {"allow": [{"tool": "*", "when": {"time": {"window": "09:00-17:00", "days": ["wed"]}}}]},
        "x.y",
        {},
        {"now": WED_1030},
        "allow",
    ),
    (
        "time on other day",
        {"allow": [{"tool": "*", "when": {"time": {"window": "09:00-17:00", "days": ["mon"]}}}]},
        "x.y",
        {},
        {"now": WED_1030},
        "ask",
    ),
    (
        "time wraps midnight, counted from its start day",
        {"allow": [{"tool": "*", "when": {"time": {"window": "22:00-02:00", "days": ["wed"]}}}]},
        "x.y",
        {},
        {"now": THU_0100},
        "allow",
    ),
    (
        "all conditions must hold",
        {"allow": [{"tool": "*", "when": {"trust": "trusted", "labels": {"a": "b"}}}]},
        "x.y",
        {},
        {"labels": {"a": "c"}},
        "ask",
    ),
]


@pytest.mark.parametrize(
    ("case", "perms", "tool", "args", "context", "expected"), CASES, ids=[c[0] for c in CASES]
)
async def test_rule_evaluation_table(
    case: str,
    perms: dict[str, Any],
    tool: str,
    args: dict[str, Any],
    context: dict[str, Any],
    expected: str,
) -> None:
    now = context.get("now", WED_1030)
    policy = BundlePolicy(Permissions.model_validate(perms), clock=lambda: now)
    c = ctx(context.get("trust", "trusted"), context.get("labels"))
    assert (await policy.check(FakeTool(tool), args, c)).decision == expected, case


def test_static_deny_hides_tool_but_conditional_and_args_rules_do_not() -> None:
    policy = BundlePolicy(
        Permissions.model_validate(
            {
                "deny": [
                    "shell.*",
                    "net_raw",
                    {"tool": "git.push", "when": {"args": {"branch": "main"}}},
                    {"tool": "web.*", "when": {"trust": "untrusted"}},
                ],
            }
        )
    )
    assert not policy.visible(FakeTool("shell.run"))
    assert not policy.visible(FakeTool("net.raw"))  # a rule written with the wire name
    assert policy.visible(FakeTool("git.push"))
    assert policy.visible(FakeTool("web.fetch"))
    assert policy.visible(FakeTool("finish", bypass=True))


def test_default_deny_hides_tools_no_rule_could_allow() -> None:
    policy = BundlePolicy(Permissions.model_validate({"default": "deny", "allow": ["fs.read"]}))
    assert policy.visible(FakeTool("fs.read"))
    assert not policy.visible(FakeTool("fs.write"))


async def test_task_overrides_only_narrow_the_bundle() -> None:
    base = BundlePolicy(Permissions.model_validate({"allow": ["*"], "deny": ["db.drop"]}))
    task = base.for_task(
        TaskOverrides.model_validate(
            {"tools": ["fs.*", "db.*"], "permissions": {"deny": ["fs.write"], "ask": ["db.query"]}}
        )
    )
    assert not task.visible(FakeTool("web.fetch"))  # outside the task allowlist
    assert not task.visible(FakeTool("fs.write"))  # task deny hides it
    assert (await task.check(FakeTool("fs.read"), {}, ctx())).decision == "allow"
    assert (
        await task.check(FakeTool("db.query"), {}, ctx())
    ).decision == "ask"  # allow narrowed to ask
    assert (await task.check(FakeTool("db.drop"), {}, ctx())).decision == "deny"  # bundle deny kept
    assert (await task.check(FakeTool("web.fetch"), {}, ctx())).decision == "deny"
    assert (
        await base.check(FakeTool("web.fetch"), {}, ctx())
    ).decision == "allow"  # base unchanged


async def test_rate_limit_counts_calls_durably_across_a_store_restart(tmp_path: Path) -> None:
    perms = Permissions.model_validate(
        {
            "allow": [{"tool": "mail.send", "when": {"rate": {"max": 2, "per": "1h"}}}],
            "default": "deny",
        }
    )
    now = [WED_1030]
    db = tmp_path / "agen.db"
    store = await SQLiteStore.open(db)
    policy = BundlePolicy(perms, store=store, clock=lambda: now[0])
    tool = FakeTool("mail.send")
    assert (await policy.check(tool, {}, ctx())).decision == "allow"
    assert (await policy.check(tool, {}, ctx())).decision == "allow"
    assert (await policy.check(tool, {}, ctx())).decision == "deny"  # the third within the hour
    await store.close()

    store = await SQLiteStore.open(db)  # a restart: a fresh policy over the reopened Store
    try:
        policy = BundlePolicy(perms, store=store, clock=lambda: now[0])
        assert (await policy.check(tool, {}, ctx())).decision == "deny"
        other = ToolContext(
            namespace="ns", deployment="other", run_id="r", root_run_id="r", conversation_id="c"
        )
        assert (await policy.check(tool, {}, other)).decision == "allow"  # counted per deployment
        now[0] += 3_600_000 + 1  # the window has passed
        assert (await policy.check(tool, {}, ctx())).decision == "allow"
    finally:
        await store.close()


async def test_rate_without_a_store_counts_in_memory() -> None:
    perms = Permissions.model_validate(
        {"deny": [{"tool": "*", "when": {"rate": {"max": 1, "per": "1m"}}}], "default": "allow"}
    )
    policy = BundlePolicy(perms, clock=lambda: WED_1030)
    # a deny with a rate matches while fewer than max calls happened: the first is denied and not counted
    assert (await policy.check(FakeTool("a.b"), {}, ctx())).decision == "deny"
    assert (await policy.check(FakeTool("a.b"), {}, ctx())).decision == "deny"


def _delegation_tools() -> dict[str, Tool]:
    from agen.bundle.config import Config
    from agen.runner.tools.delegate import delegation_tools

    class Port:  # a Hub is there: the lock tools come with it (no call reaches it here)
        pass

    config = Config.model_validate({"delegates": [{"name": "worker"}]})
    tools = delegation_tools(config, Port(), None)  # type: ignore[arg-type]
    return {t.name: t for t in tools}


async def test_delegation_and_lock_tools_obey_the_rules_and_the_tasks_tool_list() -> None:
    tools = _delegation_tools()
    assert set(tools) == {
        "call_agent",
        "start_agent",
        "query_agent",
        "signal_agent",
        "acquire_lock",
        "release_lock",
    }
    policy = BundlePolicy(
        Permissions.model_validate(
            {"ask": ["start_agent"], "deny": ["call_agent", "acquire_lock"], "default": "allow"}
        )
    )
    assert (await policy.check(tools["start_agent"], {}, ctx())).decision == "ask"
    assert not policy.visible(tools["call_agent"]) and not policy.visible(tools["acquire_lock"])
    assert (await policy.check(tools["call_agent"], {}, ctx())).decision == "deny"
    assert (await policy.check(tools["query_agent"], {}, ctx())).decision == "allow"
    listed = policy.for_task(TaskOverrides(tools=["query_agent"]))
    assert [n for n, t in tools.items() if listed.visible(t)] == ["query_agent"]
    assert (await listed.check(tools["signal_agent"], {}, ctx())).decision == "deny"
    # by default (ask) delegating waits for a person, as any tool with an effect does
    assert (await BundlePolicy(Permissions()).check(tools["call_agent"], {}, ctx())).decision == (
        "ask"
    )


async def test_report_progress_and_load_skill_follow_the_default_and_the_tasks_tool_list() -> None:
    """Not exempt (seed 000 names only finish and the artifact tools): with no rule naming them the
    bundle's default decides (ask unless set), and a task's tool list can leave them out."""
    from agen.runner.tools.builtin import LoadSkillTool, ReportProgressTool

    tools = [ReportProgressTool(None), LoadSkillTool({})]
    for t in tools:
        assert (await BundlePolicy(Permissions()).check(t, {}, ctx())).decision == "ask"
        allowed = BundlePolicy(Permissions.model_validate({"allow": [t.name]}))
        assert (await allowed.check(t, {}, ctx())).decision == "allow"
        assert not BundlePolicy(Permissions.model_validate({"default": "deny"})).visible(t)
        listed = BundlePolicy(Permissions.model_validate({"default": "allow"}))
        assert not listed.for_task(TaskOverrides(tools=["finish"])).visible(t)


async def test_finish_stays_exempt_where_delegation_is_denied() -> None:
    from agen.runner.tools.builtin import FinishTool, ReadArtifactTool, SaveArtifactTool

    policy = BundlePolicy(Permissions.model_validate({"deny": ["*"], "default": "deny"}))
    finish = FinishTool(None)
    assert policy.visible(finish) and (await policy.check(finish, {}, ctx())).decision == "allow"
    assert SaveArtifactTool.bypass_permissions and ReadArtifactTool.bypass_permissions
    assert not any(policy.visible(t) for t in _delegation_tools().values())
