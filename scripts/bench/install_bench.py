"""A user's first minutes: `pip install .` (no extras) into a fresh venv, and the first
`agen run bundles/hello` in a new AGEN_HOME, as the README's first command does.

Baselines in the same run: the same venv made and `pip install httpx` (a small, common package:
what any Python tool costs to install here), and the second `agen run` of the same bundle (warm:
deployed, byte-compiled). Needs the package index (the install downloads or reads its cache).

    python -m scripts.bench.install_bench [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=1800)
    return time.perf_counter() - t0


def _size_mb(path: Path) -> float:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return total / 1e6


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin"


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        baseline_bin = _venv(tmp / "baseline")
        baseline_s = _timed([str(baseline_bin / "pip"), "install", "--quiet", "httpx"])
        user_bin = _venv(tmp / "user")
        install_s = _timed([str(user_bin / "pip"), "install", "--quiet", str(ROOT)])
        listed = subprocess.run(
            [str(user_bin / "pip"), "list", "--format=json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        env = {**os.environ, "AGEN_HOME": str(tmp / "home")}
        env.pop("AGEN_HUB", None)
        hello = [str(user_bin / "agen"), "run", str(ROOT / "bundles" / "hello"), "Say hello"]
        first_s = _timed(hello, env)
        second_s = _timed(hello, env)
        return {
            "name": "install",
            "pip_install_s": round(install_s, 1),
            "baseline_pip_install_httpx_s": round(baseline_s, 1),
            "distributions": len(json.loads(listed)),
            "venv_mb": round(_size_mb(tmp / "user")),
            "first_run_s": round(first_s, 2),
            "second_run_s": round(second_s, 2),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = run()
    print(json.dumps(out, indent=2) if args.json else out)


if __name__ == "__main__":
    main()
