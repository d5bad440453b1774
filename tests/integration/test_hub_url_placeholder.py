"""The fleet-steward template reaches the Hub it runs under, wherever that Hub listens: its mcp.json
says ``${AGEN_HUB_URL}/mcp`` (agen up and agen nest run set AGEN_HUB_URL to their Hub), not a
hard-coded 127.0.0.1:7070."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.bundle import load_bundle_files, walk_bundle
from agen.bundle.templates import templates_dir
from agen.errors import InvalidError
from agen.hub.auth import insert_token
from agen.hub.service import Hub
from agen.runner.tooling import build_tooling
from agen.runner.tools.mcp_conn import hub_url_expanded
from agen.store import SQLiteStore
from tests.integration.test_hub_port_contract import served

TEMPLATES_ON_THE_HUB = ("fleet-steward", "assistant", "approval-triage")


@pytest.mark.parametrize("name", TEMPLATES_ON_THE_HUB)
def test_templates_that_use_hub_tools_name_the_hub_they_run_under(name: str) -> None:
    mcp = json.loads((templates_dir() / name / "mcp.json").read_text())
    assert mcp["mcpServers"]["hub"]["url"] == "${AGEN_HUB_URL}/mcp"


def test_the_placeholder_expands_to_the_hub_url_or_fails_clearly() -> None:
    env = {"AGEN_HUB_URL": "http://10.0.0.5:9000/"}
    assert hub_url_expanded("hub", "${AGEN_HUB_URL}/mcp", env) == "http://10.0.0.5:9000/mcp"
    assert hub_url_expanded("x", "https://tools.example/mcp", {}) == "https://tools.example/mcp"
    with pytest.raises(
        InvalidError, match=r"mcpServers.hub.url uses \$\{AGEN_HUB_URL\}, but no Hub"
    ):
        hub_url_expanded("hub", "${AGEN_HUB_URL}/mcp", {})


async def test_fleet_steward_lists_the_tools_of_a_hub_on_a_port_other_than_7070(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    hub = Hub(store)
    _, secret = await store.write(lambda tx: insert_token(tx, scopes=["operator"], name="steward"))
    bundle = load_bundle_files(walk_bundle(templates_dir() / "fleet-steward"))
    try:
        async with served(hub) as url:
            assert not url.endswith(":7070")
            monkeypatch.setenv("AGEN_HUB_URL", url)
            tooling = build_tooling(bundle, store, environ={"AGEN_HUB_TOKEN": secret})
            [hub_tools] = tooling.toolsets
            try:
                names = {t.name for t in await hub_tools.start()}
            finally:
                await hub_tools.close()
        assert "hub.who_am_i" in names and "hub.list_deployments" in names
    finally:
        await store.close()
