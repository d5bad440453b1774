"""The Hub alone (``agen hub serve``) never loads the engine: the rules both apply to the same rows
(approvals, memory blocks, redaction, the system prompt, a child's result note) live in agen.domain."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import importlib, pkgutil, sys
import agen.hub
for m in pkgutil.walk_packages(agen.hub.__path__, "agen.hub."):
    importlib.import_module(m.name)
print(" ".join(sorted(m for m in sys.modules if m.startswith(("agen.runner", "agen.nest", "agen.client")))))
"""


def test_importing_every_hub_module_loads_no_runner_nest_or_client_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""
