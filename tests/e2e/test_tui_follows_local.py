"""`agen tui` started before `agen up` (or left running across a restart on another port) follows
local.json to the Hub once it is there."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agen.cli.tui import moved_local_hub
from agen.client import Client
from agen.tui.app import AgenApp
from agen.tui.widgets.banner import ConnectionBanner
from agen.tui.widgets.table import FastTable
from tests.e2e.harness import Up
from tests.ports import free_port
from tests.tui.helpers import cells, until

BUNDLES = Path(__file__).parents[2] / "bundles"


async def test_tui_follows_local_json_to_a_hub_started_later_on_another_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AGEN_HOME", str(home))
    gone = Client.http(f"http://127.0.0.1:{free_port()}", None)  # where no Hub is
    app = AgenApp(gone, find_hub=moved_local_hub)
    up = Up(home)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            banner = app.screen.query_one(ConnectionBanner)
            await until(pilot, lambda: banner.lost is not None, "the lost-connection banner")
            await asyncio.to_thread(up.start)
            await asyncio.to_thread(up.agen, "deploy", str(BUNDLES / "hello"))
            await until(pilot, lambda: app.client.url == up.url, "the switch to the new Hub")
            await until(pilot, lambda: banner.lost is None, "the banner gone")
            table = app.screen.query_one("#deployments", FastTable)
            await until(pilot, lambda: cells(table, 0) == ["hello"], "the new Hub's fleet")
            assert up.url in app.sub_title
    finally:
        await asyncio.to_thread(up.stop)
