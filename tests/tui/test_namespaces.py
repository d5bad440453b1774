"""N switches the namespace every screen shows, or shows all of them (names then carry their namespace)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from agen.tui.app import AgenApp
from agen.tui.screens.fleet import FleetScreen
from agen.tui.screens.tasks import TasksScreen
from agen.tui.widgets.namespace_dialog import NamespaceDialog
from agen.tui.widgets.table import FastTable
from tests.observe_helpers import embedded_hub
from tests.tui.helpers import cells, until


async def choose(app: AgenApp, pilot: object, option: str) -> None:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    await pilot.press("N")
    await until(pilot, lambda: isinstance(app.screen, NamespaceDialog), "the namespace list")
    options = app.screen.query_one(OptionList)
    options.highlighted = options.get_option_index(option)
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, NamespaceDialog), "the list closed")


async def test_namespace_switcher_and_the_all_namespaces_view(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e:
        await e.deploy("hello")
        await e.deploy("helper", namespace="team")
        await e.run("hello", "one")
        await e.run("helper", "two", namespace="team")
        app = AgenApp(e.client, hub_label="test", watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            table = app.screen.query_one("#deployments", FastTable)
            await until(pilot, lambda: cells(table, 0) == ["hello"], "default's deployment")
            await choose(app, pilot, "team")
            await until(pilot, lambda: cells(table, 0) == ["helper"], "team's deployment")
            assert "namespace: team" in app.sub_title
            await choose(app, pilot, "*")
            await until(
                pilot,
                lambda: sorted(cells(table, 0)) == ["default/hello", "team/helper"],
                "both namespaces",
            )
            assert "namespace: all" in app.sub_title
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen), "tasks")
            tasks = app.screen.query_one("#tasks", FastTable)
            await until(
                pilot,
                lambda: sorted(cells(tasks, 1)) == ["default/hello", "team/helper"],
                "tasks of both namespaces",
            )
