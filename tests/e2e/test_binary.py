"""The single-file binary does what the installed package does, with no Python environment around it.

Every command runs with ONLY the binary's folder on PATH and a cleared environment (no venv, no
PYTHONPATH; HOME and AGEN_HOME in tmp), so anything that starts agen again as a child process
(built-in MCP servers, `agen host serve` for the process backend) must re-launch the binary.
The binary is built once per session (scripts/build-binary), or dist/agen is used when it is
newer than every source file that goes into it. Skip locally with ``-m "not binary"``.

The binary is a launcher with the one-folder build packed behind it: the first start unpacks it into
``$HOME/.cache/agen/<build-hash>/`` and later starts exec the cached copy after a cheap check
(scripts/binary/launcher.c). The cache tests compare the cache with the payload read back by
scripts/binary/pack.py, and tell a re-extraction by the cache folder's inode (a fresh copy is a new
folder renamed into place), never by timing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.ports import free_port

pytestmark = [pytest.mark.binary, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
INPUTS = ("agen", "bundles", "scripts/agen_entry.py", "scripts/build-binary", "scripts/binary")


def _newest_source_mtime() -> float:
    newest = 0.0
    for name in INPUTS:
        path = ROOT / name
        files = (
            [path]
            if path.is_file()
            else [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        )
        newest = max([newest, *(p.stat().st_mtime for p in files)])
    return newest


@pytest.fixture(scope="session")
def agen_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A binary that is at least as new as the sources: dist/agen if fresh, else one built now."""
    dist = ROOT / "dist" / "agen"
    if dist.is_file() and dist.stat().st_mtime > _newest_source_mtime():
        return dist
    out = tmp_path_factory.mktemp("binary")
    env = {**os.environ, "AGEN_DIST": str(out), "PYTHON": sys.executable}
    r = subprocess.run(
        [str(ROOT / "scripts" / "build-binary")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0 and (out / "agen").is_file(), (
        f"build-binary failed:\n{r.stdout}\n{r.stderr}"
    )
    return out / "agen"


class Box:
    """A clean machine: the binary (and the system's bubblewrap) alone on PATH, HOME/AGEN_HOME/workspaces in tmp, nothing else."""

    def __init__(self, binary: Path, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        shutil.copy2(binary, self.bin / "agen")
        bwrap = shutil.which("bwrap")  # a clean machine with bubblewrap installed (the sandbox)
        if bwrap is not None:
            (self.bin / "bwrap").symlink_to(bwrap)
        self.cwd = root / "work"
        self.cwd.mkdir()
        self.home = root / "home"
        self.env = {
            "HOME": str(self.home),
            "AGEN_HOME": str(self.home / ".agen"),
            "PATH": str(self.bin),
            "AGEN_WORKSPACE_ROOT": str(root / "workspaces"),
            "LANG": "C.UTF-8",
        }

    def popen(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        out = open(log, "ab")  # noqa: SIM115 - owned by the child
        return subprocess.Popen(["agen", *args], env=self.env, cwd=self.cwd, stdout=out, stderr=out)

    def agen(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            ["agen", *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert r.returncode == 0, (
            f"agen {' '.join(args)} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
        )
        return r


@pytest.fixture
def box(agen_binary: Path, tmp_path: Path) -> Iterator[Box]:
    yield Box(agen_binary, tmp_path)


def _write_bundle(root: Path, files: dict[str, object]) -> Path:
    for rel, value in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value if isinstance(value, str) else json.dumps(value))
    return root


def test_binary_prints_its_version_and_help_without_python_on_path(box: Box) -> None:
    assert box.agen("version").stdout.startswith("agen ")
    assert "Usage: agen" in box.agen("--help").stdout


def test_binary_init_then_run_answers_offline_from_the_bundled_template(box: Box) -> None:
    box.agen("init", "foo")
    assert (box.cwd / "foo" / "plugin.json").is_file()
    task = json.loads(box.agen("run", "foo", "hi", "--json").stdout)
    assert task["state"] == "succeeded"
    assert (box.home / ".agen" / "agen.db").is_file()  # migrations were found inside the binary


def test_binary_run_calls_the_builtin_workspace_mcp_server_by_relaunching_itself(box: Box) -> None:
    root = box.cwd / "files"
    root.mkdir()
    _write_bundle(
        box.cwd / "writer",
        {
            "plugin.json": {"name": "writer", "version": "0.1.0"},
            "mcp.json": {
                "mcpServers": {
                    "workspace": {
                        "command": "agen",
                        "args": ["mcp", "workspace", "--root", str(root)],
                    }
                }
            },
            "x-agen/agent.md": "---\nname: writer\n---\nYou write one file.\n",
            "x-agen/harness.json": {
                "provider": "fake",
                "fake": {
                    "script": [
                        {
                            "toolCalls": [
                                {
                                    "name": "workspace.write",
                                    "arguments": {
                                        "path": "note.txt",
                                        "content": "written by the binary",
                                    },
                                }
                            ]
                        },
                        {
                            "toolCalls": [
                                {
                                    "name": "finish",
                                    "arguments": {"status": "done", "summary": "wrote note.txt"},
                                }
                            ]
                        },
                    ]
                },
            },
            "x-agen/config.json": {"permissions": {"allow": ["workspace.*"], "default": "deny"}},
        },
    )
    task = json.loads(box.agen("run", "writer", "write the note", "--json", timeout=180).stdout)
    assert task["state"] == "succeeded", task
    assert task["outcome"]["summary"] == "wrote note.txt"
    assert (root / "note.txt").read_text() == "written by the binary"


@pytest.mark.parametrize("backend", ["inproc", "process"])
def test_binary_up_runs_a_deployment_and_down_stops_it(box: Box, backend: str) -> None:
    box.agen("init", "greeter")
    port = free_port()
    log = box.cwd / "up.log"
    proc = box.popen(
        "up", "--headless", "--listen", f"127.0.0.1:{port}", "--backend", backend, log=log
    )
    try:
        deadline = time.monotonic() + 60
        while not (box.home / ".agen" / "local.json").is_file():
            assert proc.poll() is None, f"agen up exited {proc.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"agen up did not start: {log.read_text()}"
            time.sleep(0.2)
        box.agen("deploy", "greeter")
        task = json.loads(box.agen("run", "greeter", "hello", "--json", timeout=180).stdout)
        assert task["state"] == "succeeded", (task, log.read_text())
        assert "Hello!" in task["outcome"]["summary"]
        assert "stopped" in box.agen("down").stdout
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _pack_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "agen_pack", ROOT / "scripts" / "binary" / "pack.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cache(box: Box) -> tuple[Path, Path]:
    """(the agen cache root, this build's folder in it)."""
    build, _ = _pack_module().read_payload(box.bin / "agen")
    root = box.home / ".cache" / "agen"
    return root, root / build


def _assert_cache_matches_payload(box: Box) -> None:
    """Every file, folder and link of the packed build is in the cache, byte for byte, and nothing else."""
    _, payload = _pack_module().read_payload(box.bin / "agen")
    _, cache = _cache(box)
    on_disk = {p.relative_to(cache).as_posix() for p in cache.rglob("*")}
    assert on_disk == set(payload)
    for rel, (kind, data) in payload.items():
        path = cache / rel
        if kind == "f":
            assert path.read_bytes() == data, rel
        elif kind == "l":
            assert os.readlink(path).encode() == data, rel
        else:
            assert path.is_dir() and not path.is_symlink(), rel


def _leftovers(box: Box) -> list[str]:
    root, _ = _cache(box)
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def test_binary_second_start_runs_from_the_cache_without_unpacking_again(box: Box) -> None:
    box.agen("version")
    root, cache = _cache(box)
    _assert_cache_matches_payload(box)
    assert (root.stat().st_mode & 0o777) == 0o700  # the cache is private to the user
    before = (cache.stat().st_ino, cache.stat().st_mtime_ns, (cache / "agen").stat().st_ino)
    assert "Usage: agen" in box.agen("--help").stdout
    box.agen("init", "foo")  # the templates inside the cached build still ship with it
    assert (box.cwd / "foo" / "plugin.json").is_file()
    after = (cache.stat().st_ino, cache.stat().st_mtime_ns, (cache / "agen").stat().st_ino)
    assert after == before, "the second start extracted the build again"
    assert _leftovers(box) == []
    assert [p.name for p in root.iterdir() if p.is_dir()] == [cache.name]


def _rewrite_same_size_and_mtime(path: Path) -> None:
    """Change a file's bytes but keep its size and mtime, the change a size/mtime check would miss."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _internal_file(cache: Path, prefix: str) -> Path:
    return next(p for p in sorted((cache / "_internal").iterdir()) if p.name.startswith(prefix))


@pytest.mark.parametrize(
    "tamper", ["rewrite-library", "delete-library", "truncate-stdlib", "add-module"]
)
def test_binary_tampered_cache_is_detected_and_unpacked_again(box: Box, tamper: str) -> None:
    box.agen("version")
    _, cache = _cache(box)
    first = (cache.stat().st_ino, cache.stat().st_ctime_ns)
    if tamper == "rewrite-library":
        _rewrite_same_size_and_mtime(_internal_file(cache, "libpython"))
    elif tamper == "delete-library":
        _internal_file(cache, "libpython").unlink()
    elif tamper == "truncate-stdlib":
        (cache / "_internal" / "base_library.zip").write_bytes(b"")
    else:
        (cache / "_internal" / "sitecustomize.py").write_text(
            "raise SystemExit('planted module ran')\n"
        )
    out = box.agen("version").stdout
    assert out.startswith("agen "), out
    assert (cache.stat().st_ino, cache.stat().st_ctime_ns) != first, (
        "the tampered cache was used instead of unpacked again"
    )
    _assert_cache_matches_payload(box)
    assert _leftovers(box) == []


def test_binary_two_first_starts_at_once_unpack_one_verified_cache(box: Box) -> None:
    logs = [box.cwd / f"start-{i}.log" for i in range(2)]
    procs = [box.popen("version", log=log) for log in logs]
    for proc, log in zip(procs, logs, strict=True):
        assert proc.wait(120) == 0, log.read_text()
        assert log.read_text().startswith("agen "), log.read_text()
    root, cache = _cache(box)
    _assert_cache_matches_payload(box)
    assert _leftovers(box) == []
    assert [p.name for p in root.iterdir() if p.is_dir()] == [cache.name]
    settled = cache.stat().st_ino
    box.agen("version")
    assert cache.stat().st_ino == settled, (
        "the cache two concurrent starts left behind did not verify"
    )
