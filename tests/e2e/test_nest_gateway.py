"""A Nest's own A2A Gateway (`agen nest run --gateway-listen`): `agen hub serve` runs no Gateway, the
Nest's is the deployment's A2A address, and the official a2a-sdk client and `agen call` get the
answer through it, in the caller's name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_run import Nest
from tests.fleet_helpers import write_bundle
from tests.ports import free_port


async def _ask(gateway: str, token: str, text: str) -> Any:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, SendMessageRequest

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        card = await A2ACardResolver(http, f"{gateway}/a2a/default/echo").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        message = Message(role=Role.ROLE_USER, message_id="nest-m1", parts=[Part(text=text)])
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
    return card, events[-1].task


def _enrol_echo_nest(hub: Up, tmp_path: Path, port: int) -> Nest:
    """Deploy the echo bundle and enrol Nest n1 with a join token, its Gateway on ``port``."""
    hub.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
    join = hub.json("join-token", "create")["token"]
    return Nest(
        hub, tmp_path / "nest", "n1", "--join-token", join, "--gateway-listen", f"127.0.0.1:{port}"
    )


def test_a_nest_gateway_serves_a2a_calls_to_its_deployments_with_the_callers_token(
    tmp_path: Path,
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    try:
        nest = _enrol_echo_nest(hub, tmp_path, port)

        def resolved() -> list[str]:
            return list(hub.json("resolve", "default/echo")["urls"])

        # The Hub lists the Nest's Gateway once the Nest holds the deployment's assignment.
        wait_until(lambda: resolved() == [f"{gateway}/a2a/default/echo"], 60, "the Nest's Gateway")
        token = hub.agen("token", "create", "--scope", "operator").stdout.strip()

        card, task = asyncio.run(_ask(gateway, token, "hello nest"))
        assert card.supported_interfaces[0].url == f"{gateway}/a2a/default/echo"
        assert task.artifacts[0].parts[0].text == "You said: hello nest"
        agen_task = hub.http("GetTask", {"id": task.id}).json()["task"]
        assert agen_task["state"] == "succeeded"

        # `agen call` finds the Nest's Gateway through the Hub and calls it.
        called = hub.agen("call", "echo", "by name")
        assert called.stdout.strip() == "You said: by name"

        # No token, or one the Hub does not know: 401, never a task.
        anonymous = httpx.post(
            f"{gateway}/a2a/default/echo",
            json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}},
            timeout=30,
        )
        assert anonymous.status_code == 401
        assert "bearer token" in anonymous.json()["error"]["message"]
        unknown = httpx.get(
            f"{gateway}/a2a/default/echo/.well-known/agent-card.json",
            headers={"Authorization": "Bearer agen_nope"},
            timeout=30,
        )
        assert unknown.status_code == 401
        assert "A2A Gateway at" in nest.log.read_text()

        # Stopped, the Nest's Gateway is gone and restarted without one, the Hub lists none.
        assert nest.stop() == 0
        # Whether or not the Hub still lists the stopped Gateway, resolve answers (the Hub's card).
        after = hub.json("resolve", "default/echo")
        assert after["card"]["name"] and after["urls"] in ([], [f"{gateway}/a2a/default/echo"])
        nest = Nest(hub, tmp_path / "nest", "n1")  # --gateway-listen off (the helper's default)
        wait_until(lambda: resolved() == [], 60, "the Nest restarted without a Gateway")
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()


def test_bad_gateway_flags_of_agen_nest_run_are_one_line_errors(tmp_path: Path) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    try:
        for args, what in [
            (("--gateway-auth", "optional"), "--gateway-auth optional"),
            (("--gateway-auth", "nobody"), "--gateway-auth 'nobody'"),
            (("--gateway-listen", "0.0.0.0:7071"), "loopback only"),
            (("--gateway-listen", "nope"), "use host:port"),
            (
                ("--gateway-listen", f"127.0.0.1:{free_port()}", "--gateway-url", "ftp://x"),
                "http(s)",
            ),
            (("--gateway-url", "http://nest.lan:7071"), "--gateway-listen is off"),
        ]:
            nest = Nest(hub, tmp_path / "bad", "bad", *args)
            assert nest.proc.wait(60) != 0, args
            log = nest.log.read_text()
            lines = [line for line in log.splitlines() if line.startswith("error:")]
            assert "Traceback" not in log and lines and what in lines[-1], (args, log)
    finally:
        hub.stop()


def _send(gateway: str, token: str, message_id: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "role": "user",
                "messageId": message_id,
                "parts": [{"kind": "text", "text": "still there?"}],
            }
        },
    }
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{gateway}/a2a/default/echo", json=body, headers=headers, timeout=120)


def test_a_nest_restarted_while_the_hub_is_away_checks_call_tokens_with_the_keys_it_kept(
    tmp_path: Path,
) -> None:
    """Seed 000 §10: the Nest keeps the Hub's token keys on disk, so its Gateway, restarted during
    a Hub outage, still tells a good call token (the call waits for the Hub: 503, retry) from a
    bad one (401) offline; once the Hub answers again, the same token's call goes through."""
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    listen = ("--gateway-listen", f"127.0.0.1:{port}")
    try:
        nest = _enrol_echo_nest(hub, tmp_path, port)
        wait_until(
            lambda: hub.json("resolve", "default/echo")["urls"], 60, "the Nest's Gateway listed"
        )
        token = hub.json("resolve", "default/echo")["call_token"]
        first = _send(gateway, token, "m1")
        assert first.status_code == 200 and first.json()["result"]["status"]["state"] == "completed"
        kept = tmp_path / "nest" / "nests" / "n1" / "token_keys.json"
        assert kept.stat().st_mode & 0o777 == 0o600 and json.loads(kept.read_text())["keys"]

        hub.stop()
        nest.stop()
        nest = Nest(hub, tmp_path / "nest", "n1", *listen)  # restarted during the outage
        wait_until(lambda: "waiting for it" in nest.log.read_text(), 60, "the Nest waits")

        def answers() -> bool:
            try:
                return httpx.get(f"{gateway}/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers, 60, "the restarted Nest's Gateway")
        waiting = _send(gateway, token, "m2")
        assert waiting.status_code == 503, waiting.text  # verified offline; the Hub is needed next
        assert "cannot reach the Hub" in waiting.text
        body, signature = token.split(".")[1:]
        forged = f"agen-ct1.{body}.{'A' * len(signature)}"
        refused = _send(gateway, forged, "m3")
        assert refused.status_code == 401
        assert "signature does not verify" in refused.json()["error"]["message"]

        hub = Up(tmp_path / "hub", port=hub.port, command=("hub", "serve")).start()
        wait_until(lambda: "answers again" in nest.log.read_text(), 90, "the Nest registered")
        again = _send(gateway, token, "m4")
        assert again.status_code == 200, again.text
        assert again.json()["result"]["status"]["state"] == "completed"
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()


def test_rotating_the_token_key_at_the_hub_reaches_a_running_nests_gateway(tmp_path: Path) -> None:
    """`agen hub rotate-token-key` over the API: refused while the key is young (saying when),
    forced twice, which makes the second key sign at once and retires the first; the Nest's
    Gateway, holding only the first, fetches the keys for the new token and refuses the old."""
    from agen.calltokens import token_key_id

    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    try:
        nest = _enrol_echo_nest(hub, tmp_path, port)
        wait_until(lambda: hub.json("resolve", "default/echo")["urls"], 60, "the Gateway listed")
        old = hub.json("resolve", "default/echo")["call_token"]
        assert _send(gateway, old, "m1").status_code == 200

        young = hub.agen("hub", "rotate-token-key", check=False)
        assert young.returncode == 5, young.stderr
        [line] = [x for x in young.stderr.splitlines() if x.startswith("error:")]
        assert "was added" in line and "Allowed from" in line and "--force rotates now" in line
        first = hub.json("hub", "rotate-token-key", "--force")
        assert [k["state"] for k in first["keys"]] == ["next", "current"]
        second = hub.json("hub", "rotate-token-key", "--force")
        assert [k["state"] for k in second["keys"]] == ["next", "current", "retired"]
        assert second["retired"] == token_key_id(old)

        new = hub.json("resolve", "default/echo")["call_token"]
        assert token_key_id(new) == first["added"]  # current while the newest is in its grace
        calls = iter(range(2, 100))
        wait_until(  # the Gateway fetches the keys for it (at most every 10 s)
            lambda: _send(gateway, new, f"m{next(calls)}").status_code == 200, 60, "the new key"
        )
        refused = _send(gateway, old, "m-old")
        assert refused.status_code == 401
        assert "which this Hub does not publish" in refused.json()["error"]["message"]
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()
