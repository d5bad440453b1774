"""The errors a newcomer meets first say what happened and what to do, with no traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from tests.e2e.harness import AGEN, Up
from tests.ports import free_port


def agen(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AGEN_HUB", "AGEN_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY")
    }
    env["AGEN_HOME"] = str(tmp_path / "home")
    return subprocess.run(
        [AGEN, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout
    )


def test_init_then_run_works_offline_without_editing_anything(tmp_path: Path) -> None:
    assert agen(tmp_path, "init", "foo").returncode == 0
    r = agen(tmp_path, "run", "foo", "hi")
    assert r.returncode == 0, r.stderr
    assert "Hello!" in r.stdout


def test_run_without_the_model_key_names_the_variable_to_set(tmp_path: Path) -> None:
    assert agen(tmp_path, "init", "bot", "--model", "gpt-4o-mini").returncode == 0
    harness = tmp_path / "bot" / "x-agen" / "harness.json"
    harness.write_text(json.dumps({**json.loads(harness.read_text()), "provider": "openai"}))
    r = agen(tmp_path, "run", "bot", "hi", "--timeout", "60s")
    assert (
        r.returncode == 3
    )  # its instances cannot start: the task stays queued (docs/troubleshooting.md)
    assert "OPENAI_API_KEY is not set" in r.stderr and "export OPENAI_API_KEY" in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_bundle_lists_every_problem_with_file_and_field(tmp_path: Path) -> None:
    assert agen(tmp_path, "init", "bot").returncode == 0
    (tmp_path / "bot" / "plugin.json").write_text('{"name": "Bad Name!", "version": 3}')
    r = agen(tmp_path, "run", "bot", "hi")
    assert r.returncode == 2
    assert "plugin.json: name:" in r.stderr and "plugin.json: version:" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_bad_flag_on_run_of_a_bundle_folder_is_refused_before_anything_is_deployed(
    tmp_path: Path,
) -> None:
    assert agen(tmp_path, "init", "bot").returncode == 0
    r = agen(tmp_path, "run", "bot", "hi", "--label", "no-equals-sign")
    assert r.returncode == 2
    assert "'no-equals-sign' is not key=value" in r.stderr and "--label" in r.stderr
    assert "Traceback" not in r.stderr
    assert "deployed" not in r.stderr
    assert not (tmp_path / "home" / "agen.db").exists()  # no store was even opened


def test_up_on_a_port_in_use_says_so_and_suggests_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = agen(tmp_path, "up", "--headless", "--listen", f"127.0.0.1:{port}", timeout=60)
    assert r.returncode == 5
    assert "address is in use" in r.stderr and "agen up --listen" in r.stderr
    assert "Traceback" not in r.stderr


def test_second_up_on_the_same_home_points_at_the_running_one(tmp_path: Path) -> None:
    hub = Up(tmp_path / "home").start()
    try:
        r = agen(tmp_path, "up", "--headless", "--listen", f"127.0.0.1:{free_port()}", timeout=60)
        assert r.returncode == 5
        assert "already running" in r.stderr and hub.url in r.stderr and "agen down" in r.stderr
    finally:
        hub.stop()


def read_only(path: Path) -> None:
    """Make a file unwritable for this user: the mode bits, and for root (who ignores them) the
    immutable attribute."""
    path.chmod(0o400)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)


def test_up_on_a_store_it_cannot_write_says_so_in_one_line_and_exits_1(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    import asyncio

    from agen.store import SQLiteStore

    async def migrate() -> None:  # a store agen used before: opening it writes nothing
        await (await SQLiteStore.open(home / "agen.db")).close()

    asyncio.run(migrate())
    db = home / "agen.db"
    read_only(db)
    try:
        r = agen(tmp_path, "up", "--headless", "--listen", f"127.0.0.1:{free_port()}", timeout=60)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], check=True)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1, r.stderr
    assert "cannot be written" in lines[0] and str(db) in lines[0] and "readonly" in lines[0]
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
