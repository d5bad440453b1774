from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agen.hub.service import Hub
from agen.store import SQLiteStore, Store
from agen.testing.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def agen_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own AGEN_HOME so nothing touches the user's ~/.agen."""
    home = tmp_path / "agen-home"
    home.mkdir(mode=0o700)  # as agen makes it: a looser home would be warned about
    monkeypatch.setenv("AGEN_HOME", str(home))
    monkeypatch.setenv("AGEN_WORKSPACE_ROOT", str(tmp_path / "workspaces"))
    for var in (
        "AGEN_HUB",
        "AGEN_TOKEN",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    yield home


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[object]:
    """A throwaway PostgreSQL cluster for the whole session (skips, or fails under AGEN_REQUIRE_POSTGRES=1,
    when this machine has no server)."""
    import shutil

    from tests.pg import Databases, start_cluster

    cluster = start_cluster()
    dbs = None
    try:
        dbs = Databases(cluster)
        yield dbs
    finally:
        if dbs is not None:
            dbs.close()
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_databases: object) -> str:
    """A new, migrated database of its own for one test."""
    from tests.pg import Databases

    assert isinstance(pg_databases, Databases)
    return pg_databases.new()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.sqlite_only``: keep only the SQLite case of the ``store`` fixture."""
    dropped = [
        item
        for item in items
        if item.get_closest_marker("sqlite_only") is not None
        and isinstance(item, pytest.Function)
        and getattr(item, "callspec", None) is not None
        and item.callspec.params.get("store") == "postgres"
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """The Store under test, once on each engine: the same port must behave the same on both."""
    s: Store
    if request.param == "sqlite":
        s = await SQLiteStore.open(tmp_path / "agen.db")
    else:
        from agen.store.postgres import PostgresStore

        s = await PostgresStore.open(request.getfixturevalue("pg_url"))
    yield s
    await s.close()


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    """A Hub service over a SQLite Store of its own (API and handler tests)."""
    store = await SQLiteStore.open(tmp_path / "hub.db")
    yield Hub(store)
    await store.close()


@pytest.fixture
async def srv() -> AsyncIterator[OpenAIServer]:
    """The scripted local OpenAI-compatible server (agen.testing.openai_server)."""
    async with OpenAIServer() as server:
        yield server


@pytest.fixture
async def dep(store: Store) -> str:
    """A deployment's id in ``store`` (the queue tests' default deployment)."""
    from tests.unit.queue_helpers import add_deployment

    return await store.write(lambda tx: add_deployment(tx))
