from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def agen_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own AGEN_HOME so nothing touches the user's ~/.agen."""
    home = tmp_path / "agen-home"
    home.mkdir(mode=0o700)  # as agen makes it: a looser home would be warned about
    monkeypatch.setenv("AGEN_HOME", str(home))
    monkeypatch.setenv("AGEN_WORKSPACE_ROOT", str(tmp_path / "workspaces"))
    for var in ("AGEN_HUB", "AGEN_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    yield home
