"""An on-behalf token acts only through a task its own deployment is running (issue #30, item 2):
naming another deployment's running task, even one a person submitted, is refused, so the agent can
neither read as that person (WhoAmI) nor make them the requester of new work."""

from __future__ import annotations

from pathlib import Path

from agen.hub.service import Hub
from tests.auth_helpers import api_token, deploy, post, running_task
from tests.fleet_helpers import enrolled_nest


async def test_an_on_behalf_token_names_only_running_tasks_of_its_own_deployment(
    hub: Hub, tmp_path: Path
) -> None:
    await deploy(hub, tmp_path, "bot")
    await deploy(hub, tmp_path, "other")
    nest_id, _ = await enrolled_nest(hub)
    alice = await api_token(hub, ["operator", "approver"], name="alice")
    victim = await api_token(hub, ["operator", "approver"], name="victim")
    agent = await api_token(hub, ["operator"], on_behalf=True, deployment="bot")
    mine = await running_task(hub, alice, "bot", nest_id)
    theirs = await running_task(hub, victim, "other", nest_id)

    me = await post(hub, "WhoAmI", {}, agent, mine)
    assert me.status_code == 200 and me.json()["info"]["name"] == "alice"

    for method, body in (("WhoAmI", {}), ("SubmitTask", {"deployment": "bot", "input": "x"})):
        refused = await post(hub, method, body, agent, theirs)
        assert refused.status_code == 403, refused.text
        message = refused.json()["error"]["message"]
        assert f"task {theirs} is not a task of default/bot" in message
        assert "running" not in message.split(":")[0]  # says nothing of where that task runs
    assert await hub.store.scalar("SELECT COUNT(*) FROM tasks WHERE deployment = 'bot'") == 1


async def test_an_on_behalf_token_needs_its_deployment_and_only_it_takes_one(hub: Hub) -> None:
    no_deployment = await post(hub, "CreateToken", {"scopes": ["operator"], "on_behalf": True}, "")
    assert no_deployment.status_code == 401  # (no token at all)
    admin = await api_token(hub, ["admin"])
    missing = await post(hub, "CreateToken", {"scopes": ["operator"], "on_behalf": True}, admin)
    assert missing.status_code == 400 and "--deployment" in missing.json()["error"]["message"]
    stray = await post(hub, "CreateToken", {"scopes": ["operator"], "deployment": "bot"}, admin)
    assert stray.status_code == 400 and "on_behalf" in stray.json()["error"]["message"]
    limited = await api_token(hub, ["admin"], namespaces=["team-a"])
    outside = await post(
        hub,
        "CreateToken",
        {"scopes": ["operator"], "namespaces": ["team-a"], "on_behalf": True, "deployment": "bot"},
        limited,
    )
    assert (
        outside.status_code == 403 and "'default' is outside" in outside.json()["error"]["message"]
    )
    made = await post(
        hub,
        "CreateToken",
        {"scopes": ["operator"], "on_behalf": True, "deployment": "team-a/bot"},
        admin,
    )
    assert made.status_code == 200 and made.json()["info"]["deployment"] == "team-a/bot"
