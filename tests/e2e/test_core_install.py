"""The core install (`pip install .`, no extras): runs and `agen up` work without a2a-sdk,
textual-serve and what they bring (protobuf, google-auth, requests, aiohttp); asking for the A2A
Gateway or `agen ui` names the extra to install.

The extras' modules are made unimportable in the child processes by a finder a sitecustomize puts
first on sys.meta_path: a real `agen` process, only without those distributions."""

from __future__ import annotations

import os
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.e2e.harness import AGEN, Up
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
EXTRAS_ONLY = ("a2a-sdk", "textual-serve", "protobuf", "google-auth", "requests", "aiohttp")
BLOCKED = ("a2a", "textual_serve", "aiohttp", "google.protobuf", "google.auth", "requests")
SITECUSTOMIZE = f'''
import sys


class NotInstalled:
    """The extras' modules, as in a core install."""

    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + ".") for n in {BLOCKED!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}} (core install)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
'''


def _core_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "core-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    env["AGEN_HOME"] = str(tmp_path / "home")
    return env


class CoreUp(Up):
    """`agen up` as the core install runs it: no --gateway-listen given."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        super().__init__(home)
        self.gateway_port = None
        self._core = env

    @property
    def env(self) -> dict[str, str]:
        return self._core


def _closure(names: list[str]) -> set[str]:
    """The distributions these requirements install (installed metadata, no extras followed)."""
    seen: set[str] = set()
    todo = [Requirement(n) for n in names]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        todo.extend(Requirement(r) for r in metadata.requires(req.name) or [])
    return seen


def test_the_core_dependencies_bring_none_of_the_extras_distributions() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    closure = _closure(project["dependencies"])
    assert {"textual", "httpx", "mcp", "uvicorn"} <= closure
    assert not closure & set(EXTRAS_ONLY), closure & set(EXTRAS_ONLY)
    extras = project["optional-dependencies"]
    assert any(Requirement(r).name == "a2a-sdk" for r in extras["a2a"])
    assert any(Requirement(r).name == "textual-serve" for r in extras["ui"])


def test_agen_run_works_without_the_extras(tmp_path: Path) -> None:
    env = _core_env(tmp_path)
    done = subprocess.run(
        [AGEN, "run", str(ROOT / "bundles" / "hello"), "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "succeeded" in done.stderr and "hello" in done.stdout


def test_agen_up_serves_without_the_a2a_extra_and_says_how_to_get_the_gateway(
    tmp_path: Path,
) -> None:
    env = _core_env(tmp_path)
    up = CoreUp(tmp_path / "home", env).start()
    try:
        assert up.agen("ps").returncode == 0
        log = up.log.read_text()
        assert "no A2A Gateway" in log and "pip install 'agen[a2a]'" in log, log
    finally:
        up.agen("down")
        assert up.proc is not None and up.proc.wait(30) == 0


def test_asking_for_a_part_of_an_extra_names_the_extra(tmp_path: Path) -> None:
    env = _core_env(tmp_path)
    for argv, extra in (
        (["up", "--headless", "--gateway-listen", f"127.0.0.1:{free_port()}"], "a2a"),
        (["call", "default/hello", "hi"], "a2a"),
        (["ui"], "ui"),
    ):
        done = subprocess.run([AGEN, *argv], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (argv, done.stderr)
        assert f"needs agen's '{extra}' extra" in done.stderr, done.stderr
        assert f"pip install 'agen[{extra}]'" in done.stderr and "Traceback" not in done.stderr
