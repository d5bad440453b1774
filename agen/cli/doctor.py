"""`agen doctor`: what this machine has for agen, each line a check that was actually made.

The sandbox (bubblewrap found and a sandbox started with it), the Postgres server binaries and
driver (for ``--store postgres://`` and its tests), Chromium (``agen ui``'s browser tests), the
providers' API keys (by name, never a value) and AGEN_HOME's permissions.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import typer

from agen.cli._common import JsonOpt, print_json


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, ok / warn / missing, and what was found."""

    name: str
    status: str
    detail: str


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else ""


def check_sandbox() -> list[Check]:
    from agen.sandbox.bwrap import INSTALL, availability, find_bwrap

    path = find_bwrap()
    if path is None:
        return [Check("bubblewrap", "missing", f"bwrap is not on PATH; {INSTALL}")]
    found = Check("bubblewrap", "ok", f"{_version([path, '--version']) or 'bwrap'} at {path}")
    started = availability()
    return [found, Check("sandbox", "ok" if started.ok else "missing", started.detail)]


def check_postgres() -> list[Check]:
    initdb = shutil.which("initdb") or next(
        iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)), None
    )
    if initdb is None:
        server = Check(
            "postgres server",
            "missing",
            "no initdb on PATH or in /usr/lib/postgresql/*/bin (only for a local Postgres store and its tests)",
        )
    else:
        server = Check("postgres server", "ok", f"{_version([initdb, '--version'])} at {initdb}")
    driver = importlib.util.find_spec("psycopg") is not None
    return [
        server,
        Check(
            "postgres driver",
            "ok" if driver else "missing",
            "psycopg is installed"
            if driver
            else "psycopg is not installed: pip install 'agen[postgres]' for --store postgres://",
        ),
    ]


def check_chromium() -> Check:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return Check("chromium", "ok", f"{_version([path, '--version']) or name} at {path}")
    return Check(
        "chromium", "missing", "no chromium on PATH (only for the browser tests of agen ui)"
    )


def check_keys() -> list[Check]:
    from agen.bundle.harness import DEFAULT_KEY_SECRET

    out = []
    for provider, var in DEFAULT_KEY_SECRET.items():
        present = bool(os.environ.get(var))
        out.append(
            Check(
                f"{provider} key",
                "ok" if present else "missing",
                f"{var} is set" if present else f"{var} is not set",
            )
        )
    return out


def check_home() -> Check:
    from agen.util.home import agen_home, default_store_path, shared_with_others

    home = agen_home()
    if not home.exists():
        return Check("AGEN_HOME", "ok", f"{home} does not exist yet (made 0700 on first use)")
    mode = stat.S_IMODE(home.stat().st_mode)
    if home.stat().st_uid != os.getuid():
        return Check(
            "AGEN_HOME", "warn", f"{home} belongs to another user (uid {home.stat().st_uid})"
        )
    store = default_store_path()
    loose, _ = (
        shared_with_others(store) if store.exists() else ([home] if mode & 0o077 else [], True)
    )
    if loose:
        where = ", ".join(f"{p} ({stat.S_IMODE(Path(p).stat().st_mode):04o})" for p in loose)
        return Check(
            "AGEN_HOME",
            "warn",
            f"other local users can read {where}; fix: chmod 700 {home} && chmod 600 {store}*",
        )
    return Check("AGEN_HOME", "ok", f"{home} is private (mode {mode:04o})")


def doctor(json_out: JsonOpt = False) -> None:
    """Report what this machine has for agen: the sandbox (bubblewrap, user namespaces), Postgres,
    Chromium, the providers' API keys (names only) and AGEN_HOME's permissions."""
    checks = [*check_sandbox(), *check_postgres(), check_chromium(), *check_keys(), check_home()]
    if json_out:
        print_json({"checks": [asdict(c) for c in checks]})
        return
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{c.status:<8} {c.name:<{width}}  {c.detail}")


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
