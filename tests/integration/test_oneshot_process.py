"""A one-shot `agen` process: the embedded run loads no HTTP client stack (httpx, rich, pygments) and none
of what only a fleet needs (triggers, the fleet leader's tick, Nest enrolment, call tokens), and the process exits without a final garbage collection over its heap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_agen

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
from agen.cli import main
FLEET_ONLY = %r
try:
    main(["run", sys.argv[1], "hi"])
except SystemExit as e:
    assert not e.code, e.code
heavy = sorted(m for m in ("httpx", "rich", "pygments") if m in sys.modules)
print("loaded:", ",".join(heavy) or "none")
fleet = sorted(m for m in FLEET_ONLY if m in sys.modules)
print("fleet-wide:", ",".join(fleet) or "none")
"""

FLEET_ONLY = (
    "agen.hub.triggers.tick",  # cron and random triggers: the bundle has none
    "agen.hub.triggers.events",
    "agen.hub.leader.fleet_tick",  # the fleet leader's tick: a scoped one-shot never runs it
    "agen.hub.fleet.enrol",  # enrolling remote Nests, their certificates
    "agen.hub.tls",
    "agen.hub.call_keys",  # call tokens: the bundle delegates to no one
    "agen.wire.delegation",
    "agen.wire.signals",
)


def test_embedded_run_on_the_fake_model_does_not_import_httpx_rich_or_the_fleet_wide_modules(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["AGEN_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-c", CHILD % (FLEET_ONLY,), str(ROOT / "bundles" / "hello")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "I'm hello" in r.stdout
    assert r.stdout.strip().splitlines()[-2:] == ["loaded: none", "fleet-wide: none"]


EXIT_CHILD = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
sys.argv = ["agen", "version"]
from agen.cli import main
main()
"""


def test_the_console_entry_point_exits_without_collecting_its_heap(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["AGEN_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-c", EXIT_CHILD],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "frozen at exit: True"


def test_calling_main_in_process_leaves_the_callers_garbage_collector_alone() -> None:
    import gc

    from agen.cli import main

    before = gc.get_freeze_count()
    try:
        main(["version"])
    except SystemExit as e:
        assert not e.code
    assert gc.get_freeze_count() == before


VERSION_CHILD = """
import sys
sys.argv = ["agen", "version"] + sys.argv[1:]
from agen.cli import main
main()
print("pydantic loaded:", "pydantic" in sys.modules)
"""


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_agen_version_answers_without_loading_the_option_validators(
    tmp_path: Path, extra: list[str]
) -> None:
    r = subprocess.run(
        [sys.executable, "-c", VERSION_CHILD, *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "pydantic loaded: False"
    if extra:
        assert json.loads("\n".join(lines[:-1]))["version"]
    else:
        assert lines[0].startswith("agen ")


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_agen_version_prints_what_its_typer_command_prints(
    capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    from agen.cli import command

    with pytest.raises(SystemExit) as e:
        command()(args=["version", *extra], prog_name="agen")
    assert not e.value.code
    through_typer = capsys.readouterr().out
    assert run_agen(capsys, "version", *extra)[:2] == (0, through_typer)


PAUSE_CHILD = """
import gc, sys
sys.argv = ["agen", "version"]
import agen.cli
agen.cli.STARTUP_PAUSE_S = 3600.0  # the timer must not fire while this child looks
agen.cli.main()
print("collecting during start-up:", gc.isenabled())
agen.cli._resume_collection()  # what the timer does once start-up is over
print("collecting after it:", gc.isenabled(), "start-up heap frozen:", gc.get_freeze_count() > 0)
"""


def test_the_console_entry_point_collects_no_garbage_during_start_up_then_resumes(
    tmp_path: Path,
) -> None:
    """Start-up's objects live as long as the process, so collecting during it only costs time; a
    command still running afterwards (agen up, agen tui) collects as usual."""
    r = subprocess.run(
        [sys.executable, "-c", PAUSE_CHILD],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-2:] == [
        "collecting during start-up: False",
        "collecting after it: True start-up heap frozen: True",
    ]


def test_calling_main_in_process_leaves_garbage_collection_on() -> None:
    import gc

    from agen.cli import main

    assert gc.isenabled()
    try:
        main(["version"])
    except SystemExit as e:
        assert not e.code
    assert gc.isenabled()
