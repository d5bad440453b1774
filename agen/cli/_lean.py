"""httpx without its own command line, for agen's commands.

``import httpx`` also imports httpx's command line (``httpx.main``: click, rich.progress, pygments;
~40-80 ms, doubling httpx's import) whenever click is installed, and uvicorn installs it. Without
click, httpx documents that it works and keeps a stub ``main`` (its CLI is the ``httpx[cli]``
extra). agen never runs httpx's CLI, so while httpx initialises (``httpx.main`` not yet bound) click
is reported missing; once httpx is imported, click imports normally (uvicorn needs it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType


class HttpxWithoutItsCli(importlib.abc.MetaPathFinder):
    """A finder first on sys.meta_path that refuses click only to httpx's initialisation."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "click" and not fullname.startswith("httpx"):
            return None
        httpx = sys.modules.get("httpx")
        if httpx is not None and hasattr(httpx, "main"):  # httpx is imported: nothing left to do
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            return None
        if fullname == "click" and httpx is not None:
            raise ModuleNotFoundError("click is not loaded for httpx's command line", name=fullname)
        return None
