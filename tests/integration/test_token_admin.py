"""`agen token ls` and `agen token revoke` (ListTokens, RevokeToken; issue #30, item 8): an admin sees
the tokens it could have made, never a secret, and a revoked token is refused by every Hub on the
store from its next request, not after a cache expires. A Hub remembers a verified token for
TOKEN_CACHE_MS (issue #32: a read fewer per request), so a revocation it was not told of (made by
another process on the database) is refused once that runs out, and an expiry at its moment."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from agen.api.app import create_app
from agen.cli import app as cli
from agen.errors import AgenError, UnauthenticatedError
from agen.hub.auth import TOKEN_CACHE_MS
from agen.hub.service import Hub
from agen.store import Store
from tests.auth_helpers import api_token, post, served


async def _token_id(hub: Hub, secret: str) -> str:
    me = await post(hub, "WhoAmI", {}, secret)
    assert me.status_code == 200, me.text
    return str(me.json()["info"]["id"])


async def test_a_token_revoked_on_one_hub_is_refused_by_another_at_once(hub: Hub) -> None:
    store: Store = hub.store
    other = Hub(store)  # a second Hub on the same store, as `agen hub serve` twice
    admin, alice = await api_token(hub, ["admin"]), await api_token(hub, ["operator"])
    alice_id = await _token_id(other, alice)  # the other Hub has just accepted it
    revoked = await post(hub, "RevokeToken", {"id": alice_id}, admin)
    assert revoked.status_code == 200 and "revoked" in revoked.json()["message"]
    refused = await post(other, "WhoAmI", {}, alice)
    assert refused.status_code == 401
    assert f"the API token {alice_id} was revoked" in refused.json()["error"]["message"]
    again = await post(hub, "RevokeToken", {"id": alice_id}, admin)
    assert again.status_code == 200 and "already revoked" in again.json()["message"]
    assert await store.scalar("SELECT COUNT(*) FROM events WHERE type = 'token.revoked'") == 1


async def test_a_token_revoked_by_another_process_is_refused_when_its_verification_runs_out(
    hub: Hub,
) -> None:
    secret = await api_token(hub, ["operator"])
    now = hub.clock()
    who = await hub.auth.authenticate(secret, now)
    # another process revokes it: the row changes and nothing in this process is told
    await hub.store.write(
        lambda tx: tx.execute("UPDATE tokens SET revoked_ms = ? WHERE id = ?", (tx.now_ms, who.id))
    )
    assert (await hub.auth.authenticate(secret, now + TOKEN_CACHE_MS - 1)).id == who.id
    with pytest.raises(UnauthenticatedError, match=f"the API token {who.id} was revoked"):
        await hub.auth.authenticate(secret, now + TOKEN_CACHE_MS)


async def test_a_remembered_token_is_refused_at_its_expiry(hub: Hub) -> None:
    secret = await api_token(hub, ["operator"], ttl_ms=TOKEN_CACHE_MS // 2)
    expires = await hub.store.scalar("SELECT MAX(expires_ms) FROM tokens WHERE kind = 'api'")
    who = await hub.auth.authenticate(secret, expires - TOKEN_CACHE_MS // 2)
    assert (await hub.auth.authenticate(secret, expires - 1)).id == who.id
    with pytest.raises(UnauthenticatedError, match="expired"):
        await hub.auth.authenticate(secret, expires)


async def test_token_ls_shows_what_an_admin_manages_and_never_a_secret(hub: Hub) -> None:
    admin = await api_token(hub, ["admin"], name="root")
    team = await api_token(hub, ["admin"], namespaces=["team-a"], name="team-admin")
    ci = await api_token(hub, ["operator"], namespaces=["team-a"], name="ci")
    await api_token(hub, ["viewer"], name="everywhere")
    listed = await post(hub, "ListTokens", {}, admin)
    assert listed.status_code == 200
    names = [t["name"] for t in listed.json()["tokens"]]
    assert names == ["root", "team-admin", "ci", "everywhere"]
    assert all(secret not in listed.text for secret in (admin, team, ci))
    # a limited admin manages the tokens limited to its namespaces, nothing wider
    mine = await post(hub, "ListTokens", {}, team)
    assert [t["name"] for t in mine.json()["tokens"]] == ["team-admin", "ci"]
    everywhere = next(t for t in listed.json()["tokens"] if t["name"] == "everywhere")["id"]
    hidden = await post(hub, "RevokeToken", {"id": everywhere}, team)
    assert hidden.status_code == 404 and "agen token ls" in hidden.json()["error"]["message"]
    ci_id = await _token_id(hub, ci)
    assert (await post(hub, "RevokeToken", {"id": ci_id}, team)).status_code == 200
    after = await post(hub, "ListTokens", {}, admin)
    assert "ci" not in [t["name"] for t in after.json()["tokens"]]
    with_revoked = await post(hub, "ListTokens", {"include_revoked": True}, admin)
    [gone] = [t for t in with_revoked.json()["tokens"] if t["name"] == "ci"]
    assert gone["revoked_ms"] is not None
    denied = await post(hub, "ListTokens", {}, ci)
    assert denied.status_code == 401  # revoked: not even a 403


async def test_agen_token_ls_and_revoke_from_the_command_line(hub: Hub) -> None:
    admin = await api_token(hub, ["admin"], name="root")
    app = create_app(hub)
    async with served(app) as url:

        async def agen(*args: str) -> tuple[int, str]:
            res = await asyncio.to_thread(
                CliRunner().invoke,
                cli,
                [*args, "--hub", url, "--token", admin],
                env={"COLUMNS": "200"},
            )
            if isinstance(res.exception, AgenError):  # as agen.cli.main() prints it
                return res.exception.exit_code, f"error: {res.exception}"
            return res.exit_code, res.stdout + res.stderr

        code, out = await agen("token", "create", "--scope", "viewer", "--name", "ci", "--json")
        assert code == 0, out
        made = json.loads(out)["info"]["id"]
        code, out = await agen("token", "ls")
        assert code == 0 and "ci" in out and made in out and "root" in out, out
        code, out = await agen("token", "revoke", made)
        assert code == 0 and f"token {made} revoked" in out, out
        code, out = await agen("token", "ls", "--json")
        assert [t["name"] for t in json.loads(out)["tokens"]] == ["root"]
        code, out = await agen("token", "revoke", "nope")
        assert code == 4 and "no API token 'nope'" in out
