"""The Nest side of mTLS (agen.nest.certs): when it renews by its clock, what it keeps, and how its
transport moves to the new certificate without cutting the calls in flight."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agen.api import registry as r
from agen.api.registry import Rpc
from agen.client import Client
from agen.errors import DeniedError, UnavailableError
from agen.hub.tls import NestCa, _new_ca, parse_csr
from agen.nest.certs import CertTransport, NestTls, new_key_and_csr, renew_if_due
from agen.wire.common import Empty
from agen.wire.nests import (
    GetTokenKeysResponse,
    RenewNestCertificateRequest,
    RenewNestCertificateResponse,
)

DAY_MS = 86_400_000


def _ca(lifetime_ms: int = 30 * DAY_MS) -> NestCa:
    cert, key = _new_ca(dt.datetime.now(dt.UTC))
    return NestCa(cert, key, lifetime_ms)


def _enrolled(folder: Path, ca: NestCa) -> NestTls:
    key_pem, csr = new_key_and_csr("n")
    issued = ca.sign(parse_csr(csr), nest_id="N1", name="n")
    return NestTls.save(folder, ca.ca_pem, issued.pem, key_pem)


class HubSigns:
    """The Hub's side of RenewNestCertificate: signs the CSR at ``now_ms`` (the same clock as the
    Nest's), or loses the reply when told to."""

    def __init__(self, ca: NestCa) -> None:
        self.ca, self.calls, self.lose_reply, self.now_ms = ca, 0, False, 0

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        assert rpc is r.RenewNestCertificate and isinstance(request, RenewNestCertificateRequest)
        self.calls += 1
        issued = self.ca.sign(
            parse_csr(request.csr),
            nest_id="N1",
            name="n",
            now=dt.datetime.fromtimestamp(self.now_ms / 1000, dt.UTC),
        )
        if self.lose_reply:
            raise UnavailableError("cannot reach the Hub (ReadTimeout)")
        return RenewNestCertificateResponse(
            certificate=issued.pem, not_after_ms=issued.not_after_ms
        )

    async def aclose(self) -> None:
        return None


async def test_the_nest_renews_when_less_than_renew_before_remains_by_its_clock(
    tmp_path: Path,
) -> None:
    ca = _ca()
    tls = _enrolled(tmp_path, ca)
    first, hub = tls.fingerprint, HubSigns(ca)
    client = Client(hub)
    now = tls.not_after_ms - 30 * DAY_MS  # just issued: 30 days left

    async def check(at: int) -> bool:
        hub.now_ms = at
        return await renew_if_due(tls, client, "N1", "n", renew_before_ms=10 * DAY_MS, now_ms=at)

    assert not await check(now + 19 * DAY_MS)  # 11 days left: not yet, and no call
    assert hub.calls == 0 and tls.generation == 0
    hub.lose_reply = True  # 9 days left: due, but the reply is lost
    assert not await check(now + 21 * DAY_MS)
    assert hub.calls == 1 and tls.fingerprint == first and tls.generation == 0  # kept as it was
    hub.lose_reply = False
    assert await check(now + 21 * DAY_MS)  # the next check asks again
    assert hub.calls == 2 and tls.fingerprint != first and tls.generation == 1
    assert tls.not_after_ms == now + 51 * DAY_MS
    assert tls.path.stat().st_mode & 0o777 == 0o600
    reread = NestTls(tmp_path, ca.ca_pem)  # what a restarted Nest loads: the renewed one
    assert reread.fingerprint == tls.fingerprint
    assert not await check(now + 21 * DAY_MS)  # 30 days left again


async def test_a_certificate_for_another_key_or_from_another_ca_is_not_kept(
    tmp_path: Path,
) -> None:
    ca = _ca()
    tls = _enrolled(tmp_path, ca)
    first = tls.path.read_text()
    _, csr = new_key_and_csr("n")
    someone_elses = ca.sign(parse_csr(csr), nest_id="N1", name="n").pem
    key_pem, csr = new_key_and_csr("n")
    other_ca = _ca().sign(parse_csr(csr), nest_id="N1", name="n").pem
    with pytest.raises(DeniedError, match="for another key"):
        tls.renewed(someone_elses, new_key_and_csr("n")[0])
    with pytest.raises(DeniedError, match="its CA did not sign"):
        tls.renewed(other_ca, key_pem)
    assert tls.path.read_text() == first and tls.generation == 0


class Gated:
    """A transport whose calls wait for a gate; it remembers being closed."""

    def __init__(self, name: str) -> None:
        self.name, self.closed, self.gate = name, False, asyncio.Event()

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        assert not self.closed, f"{self.name} used after it was closed"
        await self.gate.wait()
        return GetTokenKeysResponse(keys=[])

    async def aclose(self) -> None:
        self.closed = True


async def test_after_a_renewal_new_calls_use_the_new_certificate_and_the_old_connection_closes_when_idle(
    tmp_path: Path,
) -> None:
    ca = _ca()
    tls = _enrolled(tmp_path, ca)
    made: list[Gated] = []

    def make(context: Any) -> Gated:
        made.append(Gated(f"transport {len(made)}"))
        return made[-1]

    transport = CertTransport(tls, make)
    in_flight = asyncio.create_task(transport.call(r.GetTokenKeys, Empty()))  # a long poll
    await asyncio.sleep(0)
    key_pem, csr = new_key_and_csr("n")
    tls.renewed(ca.sign(parse_csr(csr), nest_id="N1", name="n").pem, key_pem)
    made[0].gate.set()
    made_second = asyncio.create_task(transport.call(r.GetTokenKeys, Empty()))
    await asyncio.sleep(0)
    assert len(made) == 2  # the next call went out on a transport with the new certificate
    await in_flight  # the one in flight finished on the old one...
    assert made[0].closed and not made[1].closed  # ...which closed once idle
    made[1].gate.set()
    await made_second
    await transport.aclose()
    assert made[1].closed
