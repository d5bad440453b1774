"""Go-style duration strings ("30s", "5m", "1h30m", "250ms") as integer milliseconds.

Bundles, flags and the API all speak this one format, so it lives in one place.
"""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d)")
_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}
_HINT = "use forms like 250ms, 30s, 5m, 1h30m or 720h"
MAX_NS = 2**63 - 1
"""Go's longest duration (about 292 years): beyond it a time overflows the Store's 64-bit integers."""


def parse_duration_ms(text: str) -> int:
    """Parse a Go-style duration into whole milliseconds (sub-millisecond parts round down).

    Accepts "0", a sequence of <number><unit> with units ns, us, ms, s, m, h (and d for days).
    Raises ValueError naming the bad text; negative durations are refused.
    """
    if not isinstance(text, str):
        raise ValueError(f'"{text}" is not a duration; {_HINT}')
    s = text.strip()
    if s.startswith("-"):
        raise ValueError(f'"{text}" is negative; durations must be 0 or more')
    if s.startswith("+"):
        s = s[1:]
    if s == "0":
        return 0
    pos, total_ns = 0, 0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        whole, _, frac = m.group(1).partition(".")
        unit = _UNIT_NS[m.group(2)]
        total_ns += int(whole or "0") * unit
        if frac:
            total_ns += int(frac) * unit // (10 ** len(frac))
        pos = m.end()
    if pos == 0 or pos != len(s):
        raise ValueError(f'"{text}" is not a duration; {_HINT}')
    if total_ns > MAX_NS:
        raise ValueError(
            f'"{text}" is too long; the longest duration is 2562047h (about 292 years)'
        )
    return total_ns // 1_000_000


def format_duration_ms(ms: int) -> str:
    """Format milliseconds the way Go prints durations ("1h30m0s" is written "1h30m")."""
    if ms < 0:
        return "-" + format_duration_ms(-ms)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if seconds or millis:
        out += f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "s"
    return out
