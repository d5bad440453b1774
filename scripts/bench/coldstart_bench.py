"""Cold start: `agen --help`, `agen version`, `agen run` (embedded Hub) and `agen tui` first paint.

Each command is a fresh process, timed from spawn to exit (median of --repeat). Baseline in the
same run: the bare interpreter (`python -c pass`), the floor every installed-package command pays.
`agen run` uses the offline `hello` template on a fresh AGEN_HOME each time (store creation and
migrations included), then again on one kept home (the usual case). The TUI is timed from spawn to the fleet screen showing its first rows
(headless, in-process Hub, on a store with 10 deployments made before the timed start). With --binary PATH the single-file binary's commands are timed too:
its first start (unpacking into an empty per-user cache), its warm starts, and, as their baseline,
the cached one-folder build it execs.

    python -m scripts.bench.coldstart_bench [--repeat 5] [--binary dist/agen] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench._util import machine, median

ROOT = Path(__file__).resolve().parents[2]


def _agen_script() -> str:
    """The installed `agen` console script next to this interpreter (or on PATH)."""
    here = Path(sys.executable).with_name("agen")
    return str(here) if here.is_file() else (shutil.which("agen") or "agen")


def _time(
    argv: list[str],
    repeat: int,
    env: dict[str, str],
    fresh_home: Path | None = None,
    cwd: Path | None = None,
) -> float:
    times = []
    for i in range(repeat):
        run_env = dict(env)
        if fresh_home is not None:
            run_env["AGEN_HOME"] = str(fresh_home / f"home-{i}")
        t0 = time.perf_counter()
        r = subprocess.run(argv, env=run_env, cwd=cwd, capture_output=True, timeout=300)
        dt = (time.perf_counter() - t0) * 1000
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode()[-2000:]}")
        times.append(dt)
    return round(median(times), 1)


async def _tui_store(path: Path) -> None:
    """The fleet the TUI opens: 10 deployments in an existing store, made before the timed start (a user
    runs `agen tui` on a home that has them; creating and filling the store is not the TUI's start)."""
    from agen.store import SQLiteStore
    from scripts.bench.tui_bench import populate

    store = await SQLiteStore.open(path)
    try:
        await store.write(lambda tx: populate(tx, 3, 10, 5))
    finally:
        await store.close()


async def _tui_child(spawned: float, path: Path) -> None:
    from agen.client import Client
    from agen.hub.service import Hub
    from agen.store import SQLiteStore
    from agen.tui.app import AgenApp
    from agen.tui.screens.fleet import FleetScreen

    store = await SQLiteStore.open(path)
    app = AgenApp(Client.in_process(Hub(store)), hub_label="bench", watch=False)
    async with app.run_test(size=(160, 50)) as pilot:
        while not (isinstance(app.screen, FleetScreen) and app.screen.deployments):
            await pilot.pause(0.001)
        painted = time.time()
    await store.close()
    print(json.dumps({"first_paint_ms": (painted - spawned) * 1000}))


def _tui(repeat: int, env: dict[str, str]) -> float | None:
    if not (ROOT / "scripts" / "bench" / "tui_bench.py").is_file():
        return None
    import asyncio

    times = []
    tmp = Path(tempfile.mkdtemp(prefix="agen-tui-bench-"))
    path = tmp / "tui.db"
    asyncio.run(_tui_store(path))
    for _ in range(repeat):
        spawned = time.time()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "scripts.bench.coldstart_bench",
                "--tui-child",
                repr(spawned),
                "--tui-store",
                str(path),
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if r.returncode != 0:
            raise SystemExit(f"tui cold start failed: {r.stderr[-2000:]}")
        times.append(float(json.loads(r.stdout.strip().splitlines()[-1])["first_paint_ms"]))
    shutil.rmtree(tmp, ignore_errors=True)
    return round(median(times), 1)


def run(
    repeat: int = 5, binary: Path | None = None, others: dict[str, Path] | None = None
) -> dict[str, Any]:
    agen = _agen_script()
    # PYTHONDONTWRITEBYTECODE would recompile agen's own modules on every start: an installed agen has
    # its bytecode, so the first start writes it here and the median counts starts that find it
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AGEN_HUB", "AGEN_TOKEN", "AGEN_HOME", "PYTHONDONTWRITEBYTECODE")
    }
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env["AGEN_HOME"] = str(tmp / "home")
        bundle = ROOT / "bundles" / "hello"
        out: dict[str, Any] = {"name": "coldstart", "machine": machine(), "repeat": repeat}
        out["python_c_pass_ms"] = _time([sys.executable, "-c", "pass"], repeat, env)
        out["agen_help_ms"] = _time([agen, "--help"], repeat, env)
        out["agen_version_ms"] = _time([agen, "version"], repeat, env)
        out["agen_run_embedded_ms"] = _time(
            [agen, "run", str(bundle), "hi"], repeat, env, fresh_home=tmp / "run"
        )
        home = {
            **env,
            "AGEN_HOME": str(tmp / "kept"),
        }  # the usual case: a home with a store already in it
        _time([agen, "run", str(bundle), "hi"], 1, home)
        out["agen_run_existing_home_ms"] = _time([agen, "run", str(bundle), "hi"], repeat, home)
        out["agen_tui_first_paint_ms"] = _tui(repeat, env)
        if binary is not None and binary.is_file():
            out.update(_binary(binary, bundle, repeat, tmp, others))
    return out


def _interleaved(
    exes: dict[str, Path],
    args: list[str],
    repeat: int,
    env: dict[str, str],
    fresh_home: Path | None = None,
) -> dict[str, float]:
    """Median ms of ``exe *args`` for each exe, taking turns so load drift hits every build alike."""
    times: dict[str, list[float]] = {name: [] for name in exes}
    for i in range(repeat):
        for name, exe in exes.items():
            run_env = dict(env)
            if fresh_home is not None:
                run_env["AGEN_HOME"] = str(fresh_home / f"{name}-{i}")
            times[name].append(_time([str(exe), *args], 1, run_env))
    return {name: round(median(ts), 1) for name, ts in times.items()}


def _binary(
    binary: Path, bundle: Path, repeat: int, tmp: Path, others: dict[str, Path] | None = None
) -> dict[str, Any]:
    """The single-file binary: first start (unpack into an empty cache), then warm starts.

    Baselines in the same run: ``python -c pass`` and the cached one-folder build the launcher
    execs (``<cache>/<build-hash>/agen``), so binary/one-folder is what the launcher's check costs.
    ``others`` (label -> path, e.g. a PyInstaller --onefile build) are timed in turn with them.
    """
    cache = tmp / "xdg-cache"
    clean = {
        "HOME": str(tmp),
        "PATH": "/usr/bin:/bin",
        "AGEN_HOME": str(tmp / "bhome"),
        "XDG_CACHE_HOME": str(cache),
    }
    out: dict[str, Any] = {
        "binary": str(binary),
        "binary_size_mb": round(binary.stat().st_size / 2**20, 1),
    }
    firsts = []
    for i in range(repeat):  # each with its own empty cache: what the very first command pays
        env = {**clean, "XDG_CACHE_HOME": str(tmp / f"first-cache-{i}")}
        firsts.append(_time([str(binary), "version"], 1, env))
        shutil.rmtree(tmp / f"first-cache-{i}", ignore_errors=True)
    out["binary_first_start_ms"] = round(median(firsts), 1)
    _time([str(binary), "version"], 1, clean)  # warm the cache the rows below use
    exes = {"binary": binary, **(others or {})}
    cached = [
        p / "agen" for p in (cache / "agen").glob("*") if p.is_dir() and (p / "agen").is_file()
    ]
    if cached:
        exes["onedir"] = cached[0]
        out["binary_cache_files"] = sum(1 for _ in cached[0].parent.rglob("*"))
        out["binary_cache_mb"] = round(
            sum(p.stat().st_size for p in cached[0].parent.rglob("*") if p.is_file()) / 2**20, 1
        )
    for exe in (others or {}).values():
        _time([str(exe), "version"], 1, clean)  # a cache, if that build has one, is warm too
    rows = {
        "help_ms": _interleaved(exes, ["--help"], repeat, clean),
        "version_ms": _interleaved(exes, ["version"], repeat, clean),
        "run_embedded_ms": _interleaved(
            exes, ["run", str(bundle), "hi"], repeat, clean, fresh_home=tmp / "brun"
        ),
    }
    for key, by_exe in rows.items():
        out[f"binary_{key}"] = by_exe["binary"]
        if "onedir" in by_exe:
            out[f"onedir_{key}"] = by_exe["onedir"]
    if others:
        out["other_binaries"] = {
            label: {
                "size_mb": round(path.stat().st_size / 2**20, 1),
                **{key: by_exe[label] for key, by_exe in rows.items()},
            }
            for label, path in others.items()
        }
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--binary", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tui-child", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--tui-store", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tui_child is not None:
        import asyncio

        asyncio.run(_tui_child(args.tui_child, args.tui_store))
        return
    r = run(args.repeat, args.binary)
    if args.json:
        print(json.dumps(r))
        return
    for k, v in r.items():
        print(f"{k:<28} {v}")


if __name__ == "__main__":
    main()
