from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agen.store import SQLiteStore, Store


@pytest.fixture(autouse=True)
def agen_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own AGEN_HOME so nothing touches the user's ~/.agen."""
    home = tmp_path / "agen-home"
    home.mkdir(mode=0o700)  # as agen makes it: a looser home would be warned about
    monkeypatch.setenv("AGEN_HOME", str(home))
    monkeypatch.setenv("AGEN_WORKSPACE_ROOT", str(tmp_path / "workspaces"))
    for var in ("AGEN_HUB", "AGEN_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY"):
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
