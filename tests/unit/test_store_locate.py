"""Which store a command opens: flag, then AGEN_STORE, then AGEN_HOME/store.json, then the default file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agen.errors import InvalidError
from agen.store import store_path
from agen.store.locate import home_pointer, point_home_at, resolve_store_url


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGEN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AGEN_STORE", raising=False)
    return tmp_path / "home"


def test_default_is_the_sqlite_file_in_agen_home(home: Path) -> None:
    assert resolve_store_url(None) is None
    assert store_path(None) == home / "agen.db"


def test_pointer_written_by_migrate_is_followed_and_private(home: Path, tmp_path: Path) -> None:
    point_home_at(f"sqlite:{tmp_path / 'moved.db'}")
    assert store_path(None) == tmp_path / "moved.db"
    assert stat.S_IMODE(home_pointer().stat().st_mode) == 0o600
    point_home_at(None)
    assert store_path(None) == home / "agen.db"


def test_env_beats_pointer_and_flag_beats_env(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_home_at(f"sqlite:{tmp_path / 'pointer.db'}")
    monkeypatch.setenv("AGEN_STORE", f"sqlite:{tmp_path / 'env.db'}")
    assert store_path(None) == tmp_path / "env.db"
    assert store_path(f"sqlite:{tmp_path / 'flag.db'}") == tmp_path / "flag.db"


def test_a_broken_pointer_says_where_and_how_to_fix(home: Path) -> None:
    home.mkdir(parents=True)
    home_pointer().write_text("not json")
    with pytest.raises(InvalidError, match=r"store\.json: not a store pointer.*delete it"):
        resolve_store_url(None)
