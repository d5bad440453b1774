"""The authorization matrix: every RPC of the registry against every kind of caller (issue #30).

``RULES`` says, for each RPC, who may call it; the test is generated from the registry, so an RPC
added without a rule here fails it, and so does an RPC whose scope changes without its rule. Each
cell is one HTTP request with a body no request model accepts: a caller who may call the method gets
400 (its body is checked only after authorization), one who may not gets 403 before the body is read.
Nothing runs, so every cell is cheap and none has side effects.

The callers are made as users make them: tokens with ``agen token create`` (CreateToken), an on-behalf
token acting through a running task of its own deployment, an operator's call token (ResolveAgent), a
Nest enrolled with a join token (EnrolNest) and an unused join token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agen.api.app import create_app
from agen.api.mcp_endpoint import tool_name
from agen.api.registry import RPCS
from agen.hub.service import Hub
from agen.store.sqlite import SQLiteStore
from tests.auth_helpers import api_token, call_token, deploy, running_task
from tests.fleet_helpers import enrolled_nest, join_token

RULES: dict[str, str] = {
    "CreateDeployment": "operator",
    "UpdateDeployment": "operator",
    "GetDeployment": "viewer",
    "ListDeployments": "viewer",
    "ListInstances": "viewer",
    "ScaleDeployment": "operator",
    "PauseDeployment": "operator",
    "DeleteDeployment": "operator",
    "GetLogs": "viewer",
    "SubmitTask": "operator",
    "GetTask": "viewer",
    "ListTasks": "viewer",
    "CancelTask": "operator",
    "PauseTask": "operator",
    "ResumeTask": "operator",
    "GetTaskTree": "viewer",
    "ListApprovals": "viewer",
    "GetApproval": "viewer",
    "DecideApproval": "approver",
    "CreateToken": "admin",
    "ListTokens": "admin",
    "RevokeToken": "admin",
    "WhoAmI": "any",
    "ResolveAgent": "viewer",
    "Shutdown": "admin, every namespace",
    "RotateTokenKey": "admin, every namespace",
    "ListTriggerEvents": "viewer",
    "CreateWebhookSecret": "operator",
    "ListProviderHolds": "viewer",
    "ResumeProvider": "admin",
    "ListEvents": "viewer",
    "SetNotifyTarget": "admin",
    "ListNotifyTargets": "viewer",
    "DeleteNotifyTarget": "admin",
    "DryRunTask": "operator",
    "ListRuns": "viewer",
    "GetTranscript": "viewer",
    "GetTrace": "viewer",
    "QueryTask": "viewer",
    "ResolveId": "viewer",
    "GetActivity": "viewer",
    "GetMetrics": "viewer",
    "ListMemory": "viewer",
    "GetMemory": "viewer",
    "SetMemory": "operator",
    "MemoryHistory": "viewer",
    "RollbackMemory": "operator",
    "ListArtifacts": "viewer",
    "GetArtifact": "viewer",
    "RecordFeedback": "operator",
    "ListFeedback": "viewer",
    "GetReplaySource": "operator",
    "RecordEvalRuns": "operator",
    "ListEvalRuns": "viewer",
    "GetEvalRuns": "viewer",
    # The Nest calls: a Nest's own credential only, never a user token (issue #30, item 1).
    "RegisterNest": "nest",
    "ReportNest": "nest",
    "GetDefinitionFiles": "nest",
    "LeaseTasks": "nest",
    "MarkRunning": "nest",
    "ExtendLeases": "nest",
    "CompleteTask": "nest",
    "ReleaseTask": "nest",
    "SuspendTask": "nest",
    "ReportProgress": "nest",
    "PublishLive": "nest",
    "WaitForWork": "nest",
    "GetTokenKeys": "nest",
    "RenewNestCertificate": "nest",
    "SubmitChildTask": "nest",
    "WaitChildTask": "nest",
    "CheckTurn": "nest",
    "AckInbox": "nest",
    "QueryChildTask": "nest",
    "SignalChildTask": "nest",
    "AcquireLock": "nest",
    "ReleaseLock": "nest",
    "ResolveChildAgent": "nest",
    "CountA2ACall": "nest",
    "GetPlatformSecrets": "nest",
    "CreateJoinToken": "admin, every namespace",
    "EnrolNest": "join",
    "ListNests": "viewer",
    "RevokeNest": "admin, every namespace",
    "SetSecret": "admin",
    "ListSecrets": "admin",
    "DeleteSecret": "admin",
}
"""Who may call each RPC: a user scope (admin implies the others, operator and approver imply
viewer), ``admin, every namespace`` (an admin token without a namespace limit), ``nest`` (an enrolled
Nest's credential), ``join`` (a join token) or ``any`` (every valid credential)."""

CALL_TOKEN_RPCS = {"WhoAmI", "SubmitTask", "GetTask", "CancelTask", "GetDeployment", "ResolveAgent"}
"""What an A2A Gateway does for a caller with a call token (seed 000 §10), and nothing else."""


@dataclass(frozen=True)
class Kind:
    """One kind of caller: the user scopes it ends up with, and what else limits it."""

    name: str
    scopes: frozenset[str] = frozenset()
    limited: bool = False  # to some namespaces
    on_behalf: bool = False
    machine: str | None = None  # "nest", "join" or "call"

    def may(self, rpc: str) -> bool:
        rule = RULES[rpc]
        if rule == "any":
            return True
        if self.machine == "call":
            return rpc in CALL_TOKEN_RPCS
        if rule in ("nest", "join") or self.machine is not None:
            return rule == self.machine
        if self.on_behalf and rpc == "DecideApproval":
            return False  # the person it acts for decides
        scope, _, every = rule.partition(", ")
        if every and self.limited:
            return False
        return scope in self.scopes or "admin" in self.scopes


USER = {
    "viewer": frozenset({"viewer"}),
    "operator": frozenset({"operator", "viewer"}),
    "approver": frozenset({"approver", "viewer"}),
    "admin": frozenset({"admin"}),
}
KINDS = [
    *(Kind(name, scopes) for name, scopes in USER.items()),
    Kind("admin limited to team-a", USER["admin"], limited=True),
    # acting for a person with operator + approver: the scopes both hold, never admin
    Kind("on-behalf (operator)", frozenset({"operator", "approver", "viewer"}), on_behalf=True),
    Kind("on-behalf (admin) for an admin", USER["operator"] | USER["approver"], on_behalf=True),
    Kind("call token", machine="call"),
    Kind("nest credential", machine="nest"),
    Kind("join token", machine="join"),
]
PROBE = {"authorization_matrix_probe": True}
"""A body no request model accepts (every one refuses unknown fields)."""


@dataclass
class Caller:
    token: str
    task: str | None = None


@pytest.fixture
async def callers(tmp_path: Path) -> AsyncIterator[tuple[Hub, dict[str, Caller]]]:
    tmp = tmp_path
    store = await SQLiteStore.open(tmp / "hub.db")
    hub = Hub(store)
    try:
        await deploy(hub, tmp, "bot")
        nest_id, nest = await enrolled_nest(hub)
        alice = await api_token(hub, ["operator", "approver"], name="alice")
        boss = await api_token(hub, ["admin"], name="boss")
        agent = await api_token(
            hub, ["operator", "approver"], on_behalf=True, deployment="bot", name="agent"
        )
        admin_agent = await api_token(hub, ["admin"], on_behalf=True, deployment="bot")
        made = {
            **{k: Caller(await api_token(hub, sorted(s))) for k, s in USER.items()},
            "admin limited to team-a": Caller(
                await api_token(hub, ["admin"], namespaces=["team-a"])
            ),
            "on-behalf (operator)": Caller(agent, await running_task(hub, alice, "bot", nest_id)),
            "on-behalf (admin) for an admin": Caller(
                admin_agent, await running_task(hub, boss, "bot", nest_id)
            ),
            "call token": Caller(await call_token(hub, "bot")),
            "nest credential": Caller(nest),
            "join token": Caller(await join_token(hub)),
        }
        yield hub, made
    finally:
        await store.close()


def test_every_rpc_has_a_rule_and_every_rule_an_rpc() -> None:
    assert sorted(set(RPCS) - set(RULES)) == [], "a new RPC needs its row in RULES"
    assert sorted(set(RULES) - set(RPCS)) == [], "RULES names an RPC the registry no longer has"
    for name, rpc in RPCS.items():
        scope = RULES[name].partition(", ")[0]
        assert rpc.scope == scope, f"{name}: registry scope {rpc.scope}, rule {RULES[name]}"
        assert rpc.every_namespace == RULES[name].endswith("every namespace"), name


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_each_kind_of_caller_reaches_exactly_the_rpcs_its_rule_allows(
    callers: tuple[Hub, dict[str, Caller]], kind: Kind
) -> None:
    hub, made = callers
    caller = made[kind.name]
    headers = {"Authorization": f"Bearer {caller.token}"}
    if caller.task is not None:
        headers["X-Agen-Task"] = caller.task
    wrong: list[str] = []
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)), base_url="http://hub.test"
    ) as h:
        for name in RPCS:
            r = await h.post(f"/v1/{name}", content=json.dumps(PROBE), headers=headers)
            want = (400, "invalid") if kind.may(name) else (403, "denied")
            got = (r.status_code, r.json()["error"]["code"])
            if got != want:
                wrong.append(f"{name}: {got} (want {want}): {r.json()['error']['message'][:160]}")
    assert wrong == [], f"{kind.name}:\n" + "\n".join(wrong)


async def test_a_user_token_of_any_scope_is_told_a_nest_call_needs_a_nest(
    callers: tuple[Hub, dict[str, Caller]],
) -> None:
    hub, made = callers
    for kind in ("admin", "admin limited to team-a"):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(hub)), base_url="http://hub.test"
        ) as h:
            r = await h.post(
                "/v1/RegisterNest",
                json={"name": "thief"},
                headers={"Authorization": f"Bearer {made[kind].token}"},
            )
        assert r.status_code == 403
        message = r.json()["error"]["message"]
        assert "RegisterNest is a Nest call" in message and "agen join-token create" in message


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_mcp_lists_exactly_the_tools_a_caller_may_call_and_no_nest_call(
    callers: tuple[Hub, dict[str, Caller]], kind: Kind
) -> None:
    hub, made = callers
    app = create_app(hub)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub.test"
        ) as h:
            r = await h.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                headers={
                    "Authorization": f"Bearer {made[kind.name].token}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
        assert r.status_code == 200, r.text
        listed = {t["name"] for t in r.json()["result"]["tools"]}
    finally:
        await app.state.mcp_endpoint.close()
    want = {tool_name(n) for n in RPCS if kind.may(n) and RULES[n] not in ("nest", "join")}
    assert listed == want
