"""`agen up` says a repeated log line once: a full disk must not print the same error every second."""

from __future__ import annotations

import io
import logging

from agen._logrepeat import RepeatFilter


def _logger(out: io.StringIO) -> logging.Logger:
    logger = logging.getLogger("agen.test_log_repeat")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    handler.addFilter(RepeatFilter())
    logger.handlers = [handler]
    return logger


def test_the_same_failure_from_one_loop_is_logged_once_until_it_changes() -> None:
    out = io.StringIO()
    log = _logger(out)
    for msg in [
        "disk is full",
        "disk is full",
        "disk is full",
        "busy",
        "disk is full",
        "disk is full",
    ]:
        log.warning("leader tick failed: %s", msg)  # one call site, as a loop would
    assert out.getvalue().splitlines() == [
        "leader tick failed: disk is full",
        "leader tick failed: busy",
        "leader tick failed: disk is full",
    ]


def test_different_lines_of_code_are_not_merged() -> None:
    out = io.StringIO()
    log = _logger(out)
    for _ in range(2):
        log.warning("same text")
        log.warning("same text")
    assert out.getvalue().splitlines() == ["same text", "same text"]
