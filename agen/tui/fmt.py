"""How volatile values are shown (ids, ages, durations): one place, so snapshot tests can pin them."""

from __future__ import annotations

import time

SPARK = "▁▂▃▄▅▆▇█"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def short_id(value: str | None) -> str:
    """ULIDs share their time prefix; the tail tells rows apart."""
    return value[-10:] if value else "-"


def age(ms: int | None) -> str:
    if not ms:
        return "-"
    secs = max(0, (now_ms() - ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def until(ms: int) -> str:
    """How long until ``ms`` (``0s`` when it is past): the next firing of a trigger."""
    secs = max(0, (ms - now_ms()) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def duration(ms: int | None) -> str:
    if ms is None:
        return "…"
    if ms < 1000:
        return f"{ms}ms"
    return f"{ms / 1000:.1f}s" if ms < 60_000 else f"{ms // 60_000}m{(ms % 60_000) // 1000:02d}s"


def sparkline(values: list[int]) -> str:
    if not values or max(values) == 0:
        return SPARK[0] * len(values)
    top = max(values)
    return "".join(SPARK[min(len(SPARK) - 1, v * (len(SPARK) - 1) // top)] for v in values)


def spend_bar(spent: float, limit: float | None, width: int = 10) -> str:
    """``███░░░░░░░ $0.30/$1.00`` (full and light-shade blocks, in every common monospace font); without
    a limit just the spend."""
    if not limit:
        return f"${spent:.2f}"
    filled = min(width, round(spent / limit * width))
    return "█" * filled + "░" * (width - filled) + f" ${spent:.2f}/${limit:.2f}"
