"""`agen up` says a repeated log line once: a full disk must not print the same error every second."""

from __future__ import annotations

import asyncio
import io
import logging

import pytest

from agen.util.logrepeat import RepeatFilter


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


async def test_writes_after_a_client_hung_up_say_so_once_in_agen_ups_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stream that keeps writing to a connection that is gone (an SSE client that closed its tab
    mid-burst) makes asyncio warn on every write; `agen up`'s log says it once."""
    from agen.util.logrepeat import log_to_stderr_once_per_repeat

    handler = log_to_stderr_once_per_repeat()
    caplog.set_level(logging.WARNING)
    accepted: asyncio.Future[asyncio.BaseTransport] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.transport)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        _, client = await asyncio.open_connection("127.0.0.1", port)
        transport = await accepted
        assert isinstance(transport, asyncio.WriteTransport)
        transport.abort()  # the connection is gone; the stream has not noticed yet
        for _ in range(50):
            transport.write(b"data: event\n\n")
        client.close()
    finally:
        server.close()
        logging.getLogger("agen").removeHandler(handler)
    said = [r for r in caplog.records if r.getMessage() == "socket.send() raised exception."]
    assert len(said) == 1, len(said)
