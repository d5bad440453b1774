"""Say a repeated log line once: a loop that fails every second for the same reason (a full disk makes the
leader, the Manager and every instance fail each tick) would otherwise bury everything else in the log."""

from __future__ import annotations

import logging


class RepeatFilter(logging.Filter):
    """Drop a record whose text equals the last one logged from the same line of code; a different text from
    that line is logged again (the store itself logs once when a fault starts and once when it clears)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[str, str, int], str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        site = (record.name, record.pathname, record.lineno)
        text = record.getMessage()
        if self._last.get(site) == text:
            return False
        self._last[site] = text
        return True


def log_to_stderr_once_per_repeat(level: int = logging.WARNING) -> logging.Handler:
    """What ``agen up`` logs: agen's warnings on stderr as plain lines, each repeat said once.

    asyncio's own "socket.send() raised exception." is said once too: it repeats for every write a
    stream makes after its client hung up (a burst of server-sent events, dozens of lines for one
    closed tab)."""
    quiet = logging.getLogger("asyncio")
    if not any(isinstance(f, RepeatFilter) for f in quiet.filters):
        quiet.addFilter(RepeatFilter())
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(RepeatFilter())
    logger = logging.getLogger("agen")
    logger.addHandler(handler)
    return handler
