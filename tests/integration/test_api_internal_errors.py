"""An unexpected failure inside the Hub reaches the caller as "internal error <id>" and nothing
else: no exception type or text (paths, SQL, library messages). The log has the same id on one
record with the traceback, so an operator can find the cause the caller quotes."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.client import Client
from agen.hub.service import Hub
from agen.store import Row, SQLiteStore, Tx
from agen.store.base import Params
from agen.wire.tokens import CreateTokenRequest

T = TypeVar("T")
SECRET_TEXT = "disk /srv/agen/agen.db: page 7 checksum 0xdeadbeef"


class BrokenReads(SQLiteStore):
    """A store whose reads, once ``broken``, fail the way a bug would: a plain exception with
    internal detail."""

    broken = False

    async def read(self, fn: Callable[[Tx], T]) -> T:
        if self.broken:
            raise RuntimeError(SECRET_TEXT)
        return await super().read(fn)

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        if self.broken:
            raise RuntimeError(SECRET_TEXT)
        return await super().all(sql, params)


async def test_an_unexpected_failure_answers_an_error_id_that_the_log_holds_with_its_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await BrokenReads.open(tmp_path / "agen.db")
    assert isinstance(store, BrokenReads)
    try:
        hub = Hub(store)
        app = create_app(hub)
        made = await Client.in_process(hub).call(
            rpc.CreateToken, CreateTokenRequest(scopes=["admin"], name="t")
        )
        store.broken = True
        with caplog.at_level(logging.ERROR):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://hub.test"
            ) as h:
                resp = await h.post(
                    "/v1/ListDeployments",
                    json={},
                    headers={"Authorization": f"Bearer {made.token}"},
                )
    finally:
        await store.close()
    assert resp.status_code == 500
    error = resp.json()["error"]
    assert SECRET_TEXT not in resp.text and "RuntimeError" not in resp.text
    found = re.fullmatch(
        r"internal error ([0-9a-f]{12}): the server's log has the details under this id",
        error["message"],
    )
    assert found is not None, error
    assert error["code"] == "internal" and error["details"] == {"error_id": found.group(1)}
    records = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert len(records) == 1 and records[0].exc_info is not None
    assert SECRET_TEXT in caplog.text  # the traceback, in the log only
