"""How CLI commands run their async work and which TLS context their Hub client gets."""

from __future__ import annotations

import asyncio
import ssl
from unittest import mock

import pytest

from agen import client
from agen.cli._hub import run


class _Counted:
    """A result that counts how often it was formatted with repr()."""

    reprs = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        return "counted"


def test_run_hands_back_the_result_without_formatting_it() -> None:
    """asyncio.run formats the main task (and so its result) on the way out, in a message nobody
    reads: for `agen ps` over 1,000 deployments that repr cost ~17 ms. ``run`` returns the same value
    and never formats it."""
    _Counted.reprs = 0

    async def main() -> _Counted:
        return _Counted()

    value = run(main())
    assert isinstance(value, _Counted)
    assert _Counted.reprs == 0


def test_run_raises_what_the_coroutine_raises() -> None:
    async def main() -> None:
        raise LookupError("no such deployment")

    with pytest.raises(LookupError, match="no such deployment"):
        run(main())


def test_a_client_for_an_http_hub_does_not_load_the_ca_bundle() -> None:
    """A Hub at an http:// URL speaks no TLS: its client never loads the system's CA bundle (tens
    of milliseconds of every command). One at https:// verifies against it as before."""
    with mock.patch.object(client, "_tls_context", side_effect=AssertionError("CA bundle loaded")):
        plain = client.HttpTransport("http://127.0.0.1:7070", "t")
    asyncio.run(plain.aclose())
    with mock.patch.object(
        client, "_tls_context", return_value=ssl.create_default_context()
    ) as loaded:
        secure = client.HttpTransport("https://hub.example:7443", "t")
    asyncio.run(secure.aclose())
    assert loaded.call_count == 1


def test_the_plain_http_context_trusts_no_certificate_authority() -> None:
    """Were it ever used for https, it would refuse every server: it verifies, and trusts nobody."""
    ctx = client._plain_http_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 0
