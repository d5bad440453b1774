"""AGEN_HOME and the store are private: other local users cannot read transcripts or tokens."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agen.store import SQLiteStore
from agen.up import lock_home
from agen.util.home import default_store_path


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The common umask (022): without agen's care, new files would be readable by everyone."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("usual_umask")
async def test_a_new_home_and_its_store_files_are_private_to_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "fresh" / ".agen"
    monkeypatch.setenv("AGEN_HOME", str(home))
    store = await SQLiteStore.open(default_store_path())
    try:
        await store.write(lambda tx: tx.event("default", "x"))
        assert mode(home) == 0o700
        for name in ("agen.db", "agen.db-wal", "agen.db-shm"):
            assert mode(home / name) == 0o600, name
    finally:
        await store.close()


@pytest.mark.usefixtures("usual_umask")
def test_agen_up_makes_a_missing_home_private(tmp_path: Path) -> None:
    home = tmp_path / "up-home"
    lock = lock_home(home)
    lock.close()
    assert mode(home) == 0o700


@pytest.mark.usefixtures("usual_umask")
async def test_a_home_made_readable_by_others_gets_one_warning_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "old" / ".agen"
    home.mkdir(parents=True, mode=0o755)
    os.chmod(home, 0o755)
    monkeypatch.setenv("AGEN_HOME", str(home))
    db = home / "agen.db"
    sqlite3.connect(db).close()  # as an older agen made it: 0644
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            store = await SQLiteStore.open(db)
            await store.close()
    warnings = [r.getMessage() for r in caplog.records if "other local users" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert (
        f"chmod 700 {home} && chmod 600 {db}*" in warnings[0]
        and "agen.db (mode 0644)" in warnings[0]
    )


@pytest.mark.usefixtures("usual_umask")
async def test_a_hand_made_open_home_gets_the_warning_when_its_store_is_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`mkdir ~/.agen` (0755) before the first agen command: the new store is 0600, but the home
    still lets others list it, so the warning names the home and the fix."""
    home = tmp_path / "by-hand" / ".agen"
    home.mkdir(parents=True)
    os.chmod(home, 0o755)
    monkeypatch.setenv("AGEN_HOME", str(home))
    with caplog.at_level(logging.WARNING):
        store = await SQLiteStore.open(default_store_path())
        await store.close()
    warnings = [r.getMessage() for r in caplog.records if "other local users" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert f"{home} (mode 0755)" in warnings[0] and f"chmod 700 {home}" in warnings[0]


@pytest.mark.usefixtures("usual_umask")
def test_a_nest_data_folder_is_made_private_with_every_folder_above_it_that_agen_makes(
    tmp_path: Path,
) -> None:
    """`agen nest run` in a new AGEN_HOME makes the home, ``nests/`` and its own folder: all 0700."""
    from agen.util.home import make_private_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    home = shared / "nest-home"
    make_private_dir(home / "nests" / "n1")
    assert [mode(p) for p in (home, home / "nests", home / "nests" / "n1")] == [0o700] * 3
    assert mode(shared) == 0o755  # a folder that was there already is left as it is


def test_the_first_agen_run_in_a_new_home_makes_it_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's first command: a one-shot in an AGEN_HOME that does not exist yet leaves it 0700."""
    from tests.cli_helpers import run_agen

    home = tmp_path / "new-home"
    monkeypatch.setenv("AGEN_HOME", str(home))
    bundle = Path(__file__).resolve().parents[2] / "bundles" / "hello"
    code, _out, err = run_agen(capsys, "run", str(bundle), "hi")
    assert code == 0, err
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in home.iterdir() if p.is_file())
