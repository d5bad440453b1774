"""bubblewrap for the sandbox tests: skipped where it is missing, unless CI requires it."""

from __future__ import annotations

import os

import pytest

from agen.sandbox.bwrap import availability


def bwrap_or_skip() -> str:
    """The working bwrap; CI (.ci/run) installs bubblewrap and sets AGEN_REQUIRE_BWRAP=1."""
    found = availability()
    if not found.ok or found.path is None:
        if os.environ.get("AGEN_REQUIRE_BWRAP") == "1":
            raise AssertionError(f"the sandbox cannot start: {found.detail}")
        pytest.skip(f"the sandbox cannot start here: {found.detail}")
    return found.path
