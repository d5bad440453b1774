from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import Up


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    hub = Up(tmp_path / "home").start()
    yield hub
    hub.stop()
