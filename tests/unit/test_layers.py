"""The layer order holds (pyproject.toml [tool.importlinter], docs/architecture.md "Layers"):
cli and tui import neither each other nor anything that imports them, the wire models are a leaf,
the Nest reaches the Hub only through the API, the Hub does not import the engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LINT = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"


def test_every_layer_contract_is_kept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LINT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
