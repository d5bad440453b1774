"""What an HTTP command such as ``agen ps`` loads: not httpx's own command line (click, rich's progress
bars, pygments) and not the bundle loader (every x-agen/ model and YAML) for the API's task models.
Checked in a fresh interpreter, since this test process has loaded everything already."""

from __future__ import annotations

import subprocess
import sys


def _loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport sys\nprint('loaded:' + ','.join(m for m in {modules!r} if m in sys.modules))"
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    last = r.stdout.strip().splitlines()[-1]
    return [m for m in last.removeprefix("loaded:").split(",") if m]


def test_the_cli_loads_httpx_without_httpxs_own_command_line() -> None:
    code = "import agen.cli\nimport httpx\nassert httpx.AsyncClient and callable(httpx.main)"
    assert _loaded_after(code, ("click", "pygments", "rich.progress")) == []


def test_the_api_task_models_load_without_the_bundle_loader() -> None:
    code = "import agen.api.registry"
    assert _loaded_after(code, ("agen.bundle.loader", "agen.bundle.config", "yaml")) == []


def test_the_bundle_packages_names_still_load_on_first_use() -> None:
    import pytest

    import agen.bundle
    from agen.bundle import load_bundle_files
    from agen.bundle.loader import load_bundle_files as direct

    assert load_bundle_files is direct and agen.bundle.Bundle.__name__ == "Bundle"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        agen.bundle.nothing  # noqa: B018


LIST_CHILD = """
import asyncio, sys, tempfile
from pathlib import Path

async def main():
    from agen.api import registry as r
    from agen.client import Client
    from agen.hub.service import Hub
    from agen.store import SQLiteStore
    from agen.wire.deployments import ListDeploymentsRequest

    with tempfile.TemporaryDirectory() as d:
        store = await SQLiteStore.open(Path(d) / "agen.db")
        resp = await Client.in_process(Hub(store)).call(r.ListDeployments, ListDeploymentsRequest())
        assert resp.deployments == []
        await store.close()

asyncio.run(main())
"""


def test_listing_deployments_loads_no_bundle_loader() -> None:
    """The TUI's first screen and `agen ps` list deployments; only deploying reads a bundle."""
    assert _loaded_after(LIST_CHILD, ("agen.bundle.loader", "yaml")) == []
