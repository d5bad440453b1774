"""agen: run LLM agents locally, durably."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_SDK = ("Agent", "RunResult", "host_tool")


def __getattr__(name: str) -> Any:
    """``agen.Agent`` loads the SDK on first use, so ``import agen`` stays light."""
    if name in _SDK:
        from agen import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'agen' has no attribute {name!r}")
