"""``open_store`` opens what a postgres:// URL names, from every place a store URL comes from, and a
store URL is never shown with its password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agen.errors import InvalidError
from agen.store import open_store, store_file, store_path
from agen.store.locate import is_postgres_url, redact_url


@pytest.mark.parametrize("how", ["flag", "env", "pointer"])
async def test_open_store_opens_a_postgres_url_from_the_flag_the_env_or_the_home_pointer(
    how: str, pg_url: str, agen_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "env":
        monkeypatch.setenv("AGEN_STORE", pg_url)
    elif how == "pointer":
        (agen_home / "store.json").write_text(json.dumps({"url": pg_url}))
    store = await open_store(pg_url if how == "flag" else None)
    try:
        assert type(store).__name__ == "PostgresStore"
        assert await store.scalar("SELECT COUNT(*) FROM tasks") == 0
        assert store.connect_url == pg_url
    finally:
        await store.close()
    assert store_file(pg_url if how == "flag" else None) is None  # no file to lock beside it


def test_both_postgres_schemes_name_a_postgres_store_and_other_engines_are_refused() -> None:
    assert is_postgres_url("postgres://h/db") and is_postgres_url("POSTGRESQL://h/db")
    assert not is_postgres_url("sqlite:/tmp/a.db") and not is_postgres_url(None)
    with pytest.raises(InvalidError, match="the mysql store is not supported"):
        store_path("mysql://u:pw@h/db")
    with pytest.raises(InvalidError, match="a PostgreSQL store, not a SQLite file") as e:
        store_path("postgresql://u:hunter2@h/db")
    assert "hunter2" not in str(e.value)


def test_a_store_url_is_shown_without_its_password() -> None:
    assert redact_url("postgresql://agen:s3cret@db.example:5433/agen?sslmode=require") == (
        "postgresql://agen:***@db.example:5433/agen?sslmode=require"
    )
    assert redact_url("postgres://agen@/agen?host=/run/pg&password=s3cret") == (
        "postgres://agen@/agen?host=/run/pg&password=***"
    )
    assert redact_url("postgresql://agen@h/agen") == "postgresql://agen@h/agen"
    assert redact_url("sqlite:/tmp/agen.db") == "sqlite:/tmp/agen.db"


async def test_a_postgres_store_that_cannot_be_reached_is_named_without_its_password() -> None:
    from agen.errors import StoreError

    with pytest.raises(StoreError) as e:
        await open_store("postgresql://agen:s3cret@127.0.0.1:1/agen?connect_timeout=2")
    assert "s3cret" not in str(e.value) and "postgresql://agen:***@127.0.0.1:1/agen" in str(e.value)


def test_one_parser_reads_every_store_url_and_refuses_other_engines_the_same_way() -> None:
    from agen.store.locate import locate

    assert locate("POSTGRESQL://u@h/db").url == "postgresql://u@h/db"
    assert locate("Postgres://u@h/db").dialect == "postgres"
    assert locate("SQLITE:/tmp/a.db").path == Path("/tmp/a.db")
    assert locate("sqlite:///tmp/a.db").path == Path("/tmp/a.db")
    assert locate("a.db").path == Path("a.db")
    with pytest.raises(InvalidError, match="the mysql store is not supported") as e:
        locate("mysql://u:pw@h/db")
    assert "pw" not in str(e.value)
