"""/health tells the truth about the store: a Hub that cannot write is "degraded" (503), and says why."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agen.api.app import create_app
from agen.errors import StoreError
from agen.hub.service import Hub
from agen.store import SQLiteStore, Tx


def _fill_the_disk(tx: Tx) -> None:
    """SQLITE_FULL for real: cap this connection's file at its current size, then need more pages."""
    tx.execute(f"PRAGMA max_page_count={int(tx.scalar('PRAGMA page_count'))}")
    tx.execute("CREATE TABLE filler (b BLOB)")
    tx.execute("INSERT INTO filler VALUES (zeroblob(1000000))")


def _free_the_disk(tx: Tx) -> None:
    tx.execute("PRAGMA max_page_count=1073741823")
    tx.execute("CREATE TABLE IF NOT EXISTS filler (b BLOB)")
    tx.execute("INSERT INTO filler VALUES (zeroblob(1000))")


async def test_health_is_503_degraded_with_the_store_error_while_the_disk_is_full_and_ok_after(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "hub.db")
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(Hub(store))), base_url="http://hub.test"
        ) as http:
            assert (await http.get("/health")).json()["store"] == {"ok": True}
            with pytest.raises(StoreError):
                await store.write(_fill_the_disk)
            health = await http.get("/health")
            body = health.json()
            assert health.status_code == 503 and body["status"] == "degraded"
            assert body["store"]["ok"] is False and "full" in body["store"]["error"]
            await store.write(_free_the_disk)
            health = await http.get("/health")
            assert health.status_code == 200 and health.json()["status"] == "ok"
    finally:
        await store.close()
