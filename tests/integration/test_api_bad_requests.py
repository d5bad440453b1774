"""Every bad request is a 4xx in the one error shape; a token cannot raise itself; bodies and
bundles have size limits; task overrides are checked when the task is submitted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.bundle.overrides import TaskOverrides
from agen.client import Client
from agen.errors import TooLargeError
from agen.hub.rpc.deployments import encode_files
from agen.hub.service import Hub
from agen.store import loads
from agen.wire.limits import BundleLimits
from agen.wire.tokens import CreateTokenRequest
from tests.fleet_helpers import enrolled_nest, files_b64, join_token, write_bundle
from tests.observe_helpers import embedded_hub


async def token(hub: Hub, scopes: list[str], **kw: Any) -> str:
    created = await Client.in_process(hub).call(
        rpc.CreateToken, CreateTokenRequest(scopes=scopes, **kw)
    )
    return created.token


class Api:
    """Raw HTTP against the app, so tests send exactly the bytes a careless client would."""

    def __init__(self, hub: Hub, max_body: int | None = None) -> None:
        self.app = create_app(hub, max_body=max_body)

    async def post(
        self, method: str, body: bytes | dict[str, Any] | None, tok: str
    ) -> httpx.Response:
        content = json.dumps(body).encode() if isinstance(body, dict) else body or b""
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://hub.test"
        ) as h:
            return await h.post(
                f"/v1/{method}", content=content, headers={"Authorization": f"Bearer {tok}"}
            )


def error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return dict(body["error"])


# --- tokens cannot escalate -------------------------------------------------------------------


async def test_namespace_limited_admin_cannot_stop_the_hub(hub: Hub) -> None:
    api = Api(hub)
    limited = await token(hub, ["admin"], namespaces=["team-a"])
    err = error(await api.post("Shutdown", {}, limited), 403)
    assert "without a namespace limit" in err["message"]
    assert not hub.shutdown_requested.is_set()

    r = await api.post("Shutdown", {}, await token(hub, ["admin"]))
    assert r.status_code == 200 and hub.shutdown_requested.is_set()


async def test_token_cannot_mint_a_token_with_more_trust_than_its_own(hub: Hub) -> None:
    api = Api(hub)
    untrusted = await token(hub, ["admin"], trust="untrusted")
    for higher in ("trusted", "operator"):
        err = error(
            await api.post("CreateToken", {"scopes": ["viewer"], "trust": higher}, untrusted), 403
        )
        assert "trust is untrusted" in err["message"] and err["details"]["field"] == "trust"
    same = await api.post("CreateToken", {"scopes": ["viewer"], "trust": "untrusted"}, untrusted)
    assert same.status_code == 200 and same.json()["info"]["trust"] == "untrusted"

    trusted = await token(hub, ["admin"], trust="trusted")
    error(await api.post("CreateToken", {"scopes": ["admin"], "trust": "operator"}, trusted), 403)


async def test_namespace_limited_admin_mints_only_inside_its_namespaces(hub: Hub) -> None:
    api = Api(hub)
    limited = await token(hub, ["admin"], namespaces=["team-a"])
    error(
        await api.post("CreateToken", {"scopes": ["viewer"], "namespaces": ["team-b"]}, limited),
        403,
    )
    error(await api.post("CreateToken", {"scopes": ["viewer"]}, limited), 403)
    ok = await api.post("CreateToken", {"scopes": ["viewer"], "namespaces": ["team-a"]}, limited)
    assert ok.status_code == 200


# --- malformed bodies ---------------------------------------------------------------------------


async def test_body_that_is_not_utf8_is_400_and_a_viewer_without_scope_gets_403(hub: Hub) -> None:
    api = Api(hub)
    garbage = b"\x13\x1c\x87\xff"
    admin = await token(hub, ["admin"])
    err = error(await api.post("WhoAmI", garbage, admin), 400)
    assert "not UTF-8" in err["message"]
    viewer = await token(hub, ["viewer"])
    err = error(await api.post("CreateToken", garbage, viewer), 403)
    assert "admin scope" in err["message"]
    error(await api.post("SubmitTask", b"{not json", viewer), 403)


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        ("CreateToken", {"scopes": ["viewer"], "ttl_ms": 2**64}, "ttl_ms"),
        ("SubmitTask", {"deployment": "d", "input": "x", "not_after_ms": 2**64}, "not_after_ms"),
        (
            "SubmitTask",
            {"deployment": "d", "input": "x", "not_before_ms": -(2**70)},
            "not_before_ms",
        ),
        ("PauseTask", {"id": "t", "hold_until_ms": 10**30}, "hold_until_ms"),
        ("PauseDeployment", {"name": "d", "hold_until_ms": 2**64}, "hold_until_ms"),
        ("ListEvents", {"after": 2**64}, "after"),
        ("GetLogs", {"name": "d", "after_seq": 2**64}, "after_seq"),
        ("ListRuns", {"since_ms": 2**64}, "since_ms"),
        ("GetTranscript", {"id": "r", "after_seq": 2**64}, "after_seq"),
        ("ScaleDeployment", {"name": "d", "replicas": 2**64}, "replicas"),
    ],
)
async def test_integers_past_64_bits_are_400_naming_the_field(
    hub: Hub, method: str, body: dict[str, Any], field: str
) -> None:
    err = error(await Api(hub).post(method, body, await token(hub, ["admin"])), 400)
    assert err["message"].startswith(f"{method}: invalid request: {field}:")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scopes": ["viewer"], "ttl_ms": False}, "ttl_ms"),
        ({"scopes": ["viewer"], "ttl_ms": True}, "ttl_ms"),
        ({"scopes": ["viewer"], "ttl_ms": "60000"}, "ttl_ms"),
        ({"scopes": ["viewer"], "ttl_ms": 0}, "ttl_ms"),
    ],
)
async def test_a_bool_or_string_is_not_a_token_lifetime(
    hub: Hub, body: dict[str, Any], field: str
) -> None:
    err = error(await Api(hub).post("CreateToken", body, await token(hub, ["admin"])), 400)
    assert f"{field}:" in err["message"]
    assert (
        await hub.store.scalar("SELECT COUNT(*) FROM tokens WHERE expires_ms IS NULL") == 1
    )  # only the caller


async def test_integral_json_numbers_are_integers_and_non_finite_ones_are_refused(hub: Hub) -> None:
    api, admin = Api(hub), await token(hub, ["admin"])
    assert (await api.post("ListTasks", b'{"limit": 5.0}', admin)).status_code == 200
    error(await api.post("ListTasks", b'{"limit": 5.5}', admin), 400)
    for bad in (b'{"limit": NaN}', b'{"limit": 1e400}', b'{"limit": -Infinity}'):
        assert "finite number" in error(await api.post("ListTasks", bad, admin), 400)["message"]


async def test_deeply_nested_json_is_400_not_a_recursion_error(hub: Hub) -> None:
    deep = b'{"labels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    err = error(await Api(hub).post("ListTasks", deep, await token(hub, ["admin"])), 400)
    assert "nested too deeply" in err["message"]


async def test_lone_surrogate_in_a_task_input_is_400_naming_the_field(hub: Hub) -> None:
    body = b'{"deployment": "d", "input": "hi \\ud800 there"}'
    err = error(await Api(hub).post("SubmitTask", body, await token(hub, ["admin"])), 400)
    assert err["details"]["field"] == "input" and "lone UTF-16 surrogate" in err["message"]
    labels = b'{"labels": {"\\udc00k": "v"}}'
    assert (
        error(await Api(hub).post("ListTasks", labels, await token(hub, ["admin"])), 400)[
            "details"
        ]["field"]
        == "labels.(key)"
    )


async def test_empty_body_is_refused_exactly_where_the_document_requires_one(hub: Hub) -> None:
    api, admin = Api(hub), await token(hub, ["admin"])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=api.app), base_url="http://hub.test"
    ) as h:
        doc = (await h.get("/openapi.json")).json()
    _, nest = await enrolled_nest(
        hub
    )  # the Nest calls take a Nest's credential, EnrolNest a join token
    for name, one in rpc.RPCS.items():
        if name == "Shutdown":
            continue
        required = doc["paths"][one.path]["post"]["requestBody"]["required"]
        caller = (
            nest if one.scope == "nest" else await join_token(hub) if one.scope == "join" else admin
        )
        r = await api.post(name, b"", caller)
        if required:
            assert r.status_code == 400, (name, r.text)
        else:
            assert r.status_code != 400, (name, r.text)
    assert doc["paths"]["/v1/GetTask"]["post"]["requestBody"]["required"] is True
    assert doc["paths"]["/v1/ListDeployments"]["post"]["requestBody"]["required"] is False


async def test_wrong_route_or_method_answers_in_the_error_shape(hub: Hub) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)), base_url="http://hub.test"
    ) as h:
        r = await h.get("/v1/WhoAmI")
        assert error(r, 405)["code"] == "method_not_allowed" and "POST" in r.headers["allow"]
        assert error(await h.get("/nowhere"), 404)["code"] == "not_found"


# --- size limits --------------------------------------------------------------------------------


async def test_body_over_the_limit_is_413_in_the_error_shape(hub: Hub) -> None:
    api, admin = Api(hub, max_body=1024), await token(hub, ["admin"])
    big = json.dumps({"labels": {"k": "x" * 2048}}).encode()
    err = error(await api.post("ListTasks", big, admin), 413)
    assert err["code"] == "too_large" and err["details"]["limit"] == 1024
    assert (await api.post("ListTasks", {"labels": {"k": "x"}}, admin)).status_code == 200


def test_body_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from agen.api.app import max_body_bytes

    assert max_body_bytes() == 1 << 20
    monkeypatch.setenv("AGEN_API_MAX_BODY_BYTES", "4096")
    assert max_body_bytes() == 4096


async def test_bundle_over_the_size_limits_is_refused_naming_the_file(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_BUNDLE_MAX_FILE_BYTES", "4000")
    monkeypatch.setenv("AGEN_BUNDLE_MAX_BYTES", "9000")
    api, admin = Api(hub), await token(hub, ["admin"])
    bundle = write_bundle(tmp_path / "b", "big")
    (bundle / "data").mkdir()
    (bundle / "data" / "huge.bin").write_bytes(b"\0" * 5000)
    err = error(await api.post("CreateDeployment", {"files": files_b64(bundle)}, admin), 413)
    assert "data/huge.bin" in err["message"] and err["details"]["field"] == "files.data/huge.bin"

    (bundle / "data" / "huge.bin").unlink()
    for i in range(3):
        (bundle / "data" / f"part{i}.bin").write_bytes(b"\0" * 3500)
    err = error(await api.post("CreateDeployment", {"files": files_b64(bundle)}, admin), 413)
    assert "in total" in err["message"] and "data/part" in err["message"]
    assert await hub.store.scalar("SELECT COUNT(*) FROM deployments") == 0


def test_the_cli_refuses_an_oversize_bundle_before_uploading_it() -> None:
    with pytest.raises(TooLargeError, match=r"bundle file data\.bin is 6\.0 MiB"):
        encode_files({"plugin.json": b"{}", "data.bin": b"\0" * (6 << 20)}, BundleLimits())


# --- task overrides -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"permissions": {"allow": ["fs.*"]}}, "overrides.permissions"),
        ({"budget": {"maxRunDuration": "soon"}}, "overrides.budget.maxRunDuration"),
        ({"budget": {"maxTurns": 0}}, "overrides.budget.maxTurns"),
        ({"tool": ["fs.read"]}, "overrides.tool"),
    ],
)
async def test_bad_task_overrides_are_400_naming_the_field(
    hub: Hub, overrides: dict[str, Any], field: str
) -> None:
    body = {"deployment": "d", "input": "x", "overrides": overrides}
    err = error(await Api(hub).post("SubmitTask", body, await token(hub, ["admin"])), 400)
    assert f"{field}:" in err["message"]


async def test_task_overrides_are_stored_in_the_seed_shape_the_runner_reads(
    hub: Hub, tmp_path: Path
) -> None:
    api, admin = Api(hub), await token(hub, ["admin"])
    r = await api.post(
        "CreateDeployment", {"files": files_b64(write_bundle(tmp_path / "b", "w"))}, admin
    )
    assert r.status_code == 200, r.text
    overrides = {
        "tools": ["fs.*"],
        "systemAddendum": "Be brief.",
        "permissions": {"deny": ["fs.write"], "ask": ["fs.read"]},
        "budget": {"maxTurns": 3, "maxRunDuration": "90s"},
    }
    r = await api.post(
        "SubmitTask", {"deployment": "w", "input": "x", "overrides": overrides}, admin
    )
    assert r.status_code == 200, r.text
    stored = loads(
        await hub.store.scalar(
            "SELECT overrides FROM tasks WHERE id = ?", (r.json()["task"]["id"],)
        )
    )
    assert stored == overrides
    ov = TaskOverrides.model_validate(stored)
    assert (ov.deny, ov.ask, ov.max_turns, ov.max_run_duration_ms) == (
        ["fs.write"],
        ["fs.read"],
        3,
        90_000,
    )


async def test_a_label_filter_key_with_quotes_is_just_a_key(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("w")
        await e.run("w", "hi", labels={'a"b': "x"})
        api = Api(e.node.hub)
        admin = await token(e.node.hub, ["admin"])
        r = await api.post("ListRuns", {"labels": {'a"b': "x"}}, admin)
        assert r.status_code == 200 and len(r.json()["runs"]) == 1
        r = await api.post("ListRuns", {"labels": {"$.c": "y"}}, admin)
        assert r.status_code == 200 and r.json()["runs"] == []
