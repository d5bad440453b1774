"""A Nest given several Hubs (``agen nest run --hub A --hub B``) calls the next one when the Hub it
used stops answering, and says which it moved to; when none answers, the error names them all."""

from __future__ import annotations

import pytest

from agen.api import registry as rpc
from agen.api.app import create_app
from agen.client import Client, HttpTransport
from agen.errors import UnavailableError
from agen.hub.service import Hub
from agen.nest.hubs import FailoverTransport
from agen.testing.server import ThreadServer
from agen.wire.nests import ListNestsRequest
from tests.integration.test_api import admin_token
from tests.ports import free_port


async def test_calls_move_to_the_next_hub_when_one_stops_answering(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    token = await admin_token(hub)
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there (a killed Hub)
    made: list[str] = []

    def make(url: str) -> HttpTransport:
        made.append(url)
        return HttpTransport(url, token)

    async with ThreadServer(create_app(hub)) as live:
        transport = FailoverTransport([dead, live.url], make)
        async with Client(transport) as client:
            assert (await client.call(rpc.ListNests, ListNestsRequest())).nests == []
            assert transport.url == live.url
            assert f"now using the Hub at {live.url}" in caplog.text
            await client.call(rpc.ListNests, ListNestsRequest())
            assert made == [dead, live.url]  # each Hub's client made once, the live one kept

    alone = FailoverTransport([dead, f"http://127.0.0.1:{free_port()}"], make)
    async with Client(alone) as client:
        with pytest.raises(UnavailableError, match=r"no Hub answers \(http://127.0.0.1:\d+, http"):
            await client.call(rpc.ListNests, ListNestsRequest())
