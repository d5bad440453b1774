"""The TLS client certificate of a request (mTLS for Nests, seed 000 §10), as the ASGI TLS extension
carries it: ``scope["extensions"]["tls"]["client_cert_chain"]``, PEM, the client's own first.

uvicorn (up to 0.54 at least) does not fill that extension in, and gives the application no way to
reach the connection's SSL object (encode/uvicorn#400 and #745; the pull requests that add it are not
released). So a TLS Hub serves HTTP with ``peer_cert_protocol()``: uvicorn's h11 protocol, which on each
connection reads the certificate the TLS layer verified (``ssl_object.getpeercert``) and adds the
extension to every request's scope. A server whose uvicorn fills it in itself keeps its own.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Any, Any], Awaitable[None]]


def peer_certificate(scope: Scope) -> str | None:
    """The client certificate (PEM) the TLS layer verified for this request, or None."""
    tls = (scope.get("extensions") or {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or ()
    return str(chain[0]) if chain else None


class _WithPeerCert:
    """An ASGI app for one connection: each request's scope gets the connection's TLS extension."""

    def __init__(self, app: Asgi, extension: dict[str, Any]) -> None:
        self.app, self.extension = app, extension

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            extensions = dict(scope.get("extensions") or {})
            extensions.setdefault("tls", self.extension)
            scope = {**scope, "extensions": extensions}
        await self.app(scope, receive, send)


def peer_cert_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol, telling the app which client certificate a connection came with
    (uvicorn is imported here, when a TLS Hub starts, not by everything that imports the API)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class PeerCertProtocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            ssl_object = transport.get_extra_info("ssl_object")
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            if der:
                self.app = _WithPeerCert(
                    self.app,
                    {
                        "server_cert": None,
                        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)],
                        "client_cert_name": None,
                        "client_cert_error": None,
                        "tls_version": None,
                        "cipher_suite": None,
                    },
                )

    return PeerCertProtocol
