"""The Hub's HTTP API: one registry, one error shape, scopes, drain behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.client import Client, HttpTransport
from agen.errors import (
    ConflictError,
    DeniedError,
    InvalidError,
    NotFoundError,
    UnauthenticatedError,
)
from agen.hub.service import Hub
from agen.wire.common import Empty
from agen.wire.deployments import (
    CreateDeploymentRequest,
    DeleteDeploymentRequest,
    GetDeploymentRequest,
    GetLogsRequest,
    ListDeploymentsRequest,
    PauseDeploymentRequest,
    ScaleDeploymentRequest,
)
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import files_b64, write_bundle


def http_client(hub: Hub, token: str | None) -> Client:
    transport = HttpTransport("http://hub.test", token)
    transport._http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)),
        base_url="http://hub.test",
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
    return Client(transport)


async def admin_token(hub: Hub, **kw: Any) -> str:
    local = Client.in_process(hub)
    created = await local.call(rpc.CreateToken, CreateTokenRequest(scopes=["admin"], **kw))
    return created.token


async def test_deploy_scale_stop_start_and_delete_over_http(hub: Hub, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "greeter", config={"scale": {"min": 1, "max": 3}})
    client = http_client(hub, await admin_token(hub))
    created = await client.call(
        rpc.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
    )
    assert created.created and created.deployment is not None
    dep = created.deployment
    assert (
        dep.name == "greeter"
        and dep.definition_id.startswith("greeter@sha256:")
        and dep.desired == 1
    )

    again = await client.call(
        rpc.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle))
    )
    assert not again.created and not again.changed

    scaled = await client.call(
        rpc.ScaleDeployment, ScaleDeploymentRequest(name="greeter", replicas=3)
    )
    assert scaled.deployment and scaled.deployment.desired == 3
    with pytest.raises(InvalidError, match="at most 3"):
        await client.call(rpc.ScaleDeployment, ScaleDeploymentRequest(name="greeter", replicas=4))

    stopped = await client.call(
        rpc.PauseDeployment, PauseDeploymentRequest(name="greeter", reason="maintenance")
    )
    assert stopped.deployment and stopped.deployment.paused and stopped.deployment.desired == 0
    with pytest.raises(ConflictError, match="agen start greeter"):
        await client.call(rpc.ScaleDeployment, ScaleDeploymentRequest(name="greeter", replicas=2))
    started = await client.call(
        rpc.PauseDeployment, PauseDeploymentRequest(name="greeter", paused=False)
    )
    assert started.deployment and not started.deployment.paused and started.deployment.desired == 1

    listed = await client.call(rpc.ListDeployments, ListDeploymentsRequest())
    assert [d.name for d in listed.deployments] == ["greeter"]
    logs = await client.call(rpc.GetLogs, GetLogsRequest(name="greeter"))
    assert [line.message for line in logs.lines][:2] == [
        f"created from {dep.definition_id}",
        "scaled to 3",
    ]

    await client.call(rpc.DeleteDeployment, DeleteDeploymentRequest(name="greeter"))
    with pytest.raises(NotFoundError, match="agen ps"):
        await client.call(rpc.GetDeployment, GetDeploymentRequest(name="greeter"))


async def test_changed_bundle_updates_the_definition_by_digest(hub: Hub, tmp_path: Path) -> None:
    client = Client.in_process(hub)
    first = await client.call(
        rpc.CreateDeployment,
        CreateDeploymentRequest(files=files_b64(write_bundle(tmp_path / "b", "w"))),
    )
    second = await client.call(
        rpc.CreateDeployment,
        CreateDeploymentRequest(
            files=files_b64(write_bundle(tmp_path / "b", "w", prompt="You answer at length."))
        ),
    )
    assert second.changed and not second.created
    assert first.deployment and second.deployment
    assert first.deployment.digest != second.deployment.digest
    assert await hub.store.scalar("SELECT COUNT(*) FROM definitions") == 2


async def test_invalid_bundle_is_refused_with_every_problem(hub: Hub, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "bad", config={"kind": "nope"})
    client = http_client(hub, await admin_token(hub))
    with pytest.raises(InvalidError) as info:
        await client.call(rpc.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    assert "config.json" in str(info.value)


async def test_missing_or_unknown_token_is_unauthenticated(hub: Hub) -> None:
    with pytest.raises(UnauthenticatedError, match="agen token create"):
        await http_client(hub, "agen_nope").call(rpc.WhoAmI, Empty())
    with pytest.raises(UnauthenticatedError):
        await http_client(hub, None).call(rpc.WhoAmI, Empty())


async def test_viewer_token_reads_but_cannot_deploy(hub: Hub, tmp_path: Path) -> None:
    local = Client.in_process(hub)
    viewer = (
        await local.call(rpc.CreateToken, CreateTokenRequest(scopes=["viewer"], name="ro"))
    ).token
    assert viewer.startswith("agen_")
    client = http_client(hub, viewer)
    me = await client.call(rpc.WhoAmI, Empty())
    assert me.info.scopes == ["viewer"] and me.info.name == "ro"
    await client.call(rpc.ListDeployments, ListDeploymentsRequest())
    with pytest.raises(DeniedError, match="operator scope"):
        await client.call(
            rpc.CreateDeployment,
            CreateDeploymentRequest(files=files_b64(write_bundle(tmp_path / "b"))),
        )
    stored = await hub.store.all("SELECT hash FROM tokens")
    assert all(viewer not in r["hash"] for r in stored)


async def test_namespace_limited_token_cannot_see_other_namespaces(hub: Hub) -> None:
    token = await admin_token(hub, namespaces=["team-a"])
    client = http_client(hub, token)
    await client.call(rpc.ListDeployments, ListDeploymentsRequest(namespace="team-a"))
    with pytest.raises(DeniedError, match="team-a"):
        await client.call(rpc.ListDeployments, ListDeploymentsRequest(namespace="default"))


async def test_expired_token_is_refused(hub: Hub) -> None:
    token = await admin_token(hub, ttl_ms=1)
    import asyncio

    await asyncio.sleep(0.01)
    with pytest.raises(UnauthenticatedError, match="expired"):
        await http_client(hub, token).call(rpc.WhoAmI, Empty())


async def test_errors_have_one_shape_and_openapi_lists_every_rpc(hub: Hub) -> None:
    app = create_app(hub)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://hub.test"
    ) as http:
        token = await admin_token(hub)
        r = await http.post(
            "/v1/NoSuchMethod", json={}, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        r = await http.post(
            "/v1/GetDeployment", json={"nme": "x"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 400 and set(r.json()["error"]) == {"code", "message", "details"}
        doc = (await http.get("/openapi.json")).json()
        assert set(doc["paths"]) == {r.path for r in rpc.RPCS.values()}
        assert doc["paths"]["/v1/SubmitTask"]["post"]["x-agen-scope"] == "operator"


async def test_draining_hub_refuses_new_work_but_answers_health_and_reads(
    hub: Hub, tmp_path: Path
) -> None:
    app = create_app(hub)
    token = await admin_token(hub)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://hub.test"
    ) as http:
        assert (await http.get("/ready")).status_code == 200
        hub.draining = True
        hub.in_flight = lambda: 2
        health = await http.get("/health")
        assert health.status_code == 200 and health.json() == {
            "status": "shutting_down",
            "shutting_down": True,
            "in_flight": 2,
            "store": {"ok": True},
        }
        ready = await http.get("/ready")
        assert ready.status_code == 503 and ready.json()["reason"] == "draining"
        r = await http.post(
            "/v1/CreateDeployment",
            json={"files": files_b64(write_bundle(tmp_path / "b"))},
            headers=auth,
        )
        assert r.status_code == 503 and r.headers["Retry-After"] == "5"
        assert (await http.post("/v1/ListDeployments", json={}, headers=auth)).status_code == 200


async def test_a_paused_deployment_refuses_a_task_as_unavailable_at_stage_paused(
    hub: Hub, tmp_path: Path
) -> None:
    """Paused is not a rate limit: 503 `unavailable` with stage paused, saying how to start it."""
    bundle = write_bundle(tmp_path / "b", "greeter")
    token = await admin_token(hub)
    client = http_client(hub, token)
    await client.call(rpc.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    await client.call(rpc.PauseDeployment, PauseDeploymentRequest(name="greeter"))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)), base_url="http://hub.test"
    ) as http:
        resp = await http.post(
            "/v1/SubmitTask",
            json={"deployment": "greeter", "input": "hi"},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert resp.status_code == 503, resp.text
    error = resp.json()["error"]
    assert error["code"] == "unavailable" and error["details"]["stage"] == "paused"
    assert "agen start greeter" in error["message"]
