"""The one API client, used by the CLI and the TUI, with two transports.

In-process calls go straight to the registry's handlers as the local admin (the embedded
``agen run`` path, no HTTP). HTTP calls post JSON to ``--hub`` with a bearer token; the
transport is the strict point where httpx errors become AgenErrors. httpx is imported only by the
HTTP transport: it pulls in rich and pygments (its own CLI), which the embedded path does not pay for.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from agen.api.registry import Rpc
from agen.crypto.cahash import CA_HASH_ENV, ca_hash_of, check_ca_hash
from agen.errors import AgenError, DeniedError, UnavailableError, from_dict

if TYPE_CHECKING:
    import httpx

    from agen.hub.auth import Principal
    from agen.hub.service import Hub

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)

DEFAULT_HUB = "http://127.0.0.1:7070"
HUB_TIMEOUT_ENV = "AGEN_HUB_TIMEOUT"
HUB_TIMEOUT_S = 30.0
"""How long a command waits for the Hub to answer one call (AGEN_HUB_TIMEOUT overrides it)."""


def hub_timeout_s() -> float:
    """AGEN_HUB_TIMEOUT as seconds ("45" or a duration: "45s", "2m"), else 30."""
    from agen.errors import InvalidError
    from agen.util.duration import parse_duration_ms

    raw = os.environ.get(HUB_TIMEOUT_ENV, "").strip()
    if not raw:
        return HUB_TIMEOUT_S
    try:
        seconds = float(raw) if raw.replace(".", "", 1).isdigit() else parse_duration_ms(raw) / 1000
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise InvalidError(
            f"{HUB_TIMEOUT_ENV}={raw!r}: use seconds or a duration above 0, e.g. 30 or 2m",
            field=HUB_TIMEOUT_ENV,
        )
    return seconds


_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
"""What a bearer token may hold: printable ASCII, no spaces (anything else cannot go in a header)."""


LiveEvents = AsyncIterator[dict[str, Any]]
"""Live events (agen.domain.live) as event dicts (``seq`` None), in the order they happen."""


class Transport(Protocol):
    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel: ...

    async def aclose(self) -> None: ...


class InProcessTransport:
    """Calls handlers directly, as the local admin unless told otherwise."""

    def __init__(self, hub: Hub, principal: Principal | None = None) -> None:
        self.hub = hub
        self.principal = principal or hub.auth.local_admin

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        from agen.api.dispatch import dispatch

        return await dispatch(self.hub, self.principal, rpc, request)

    @contextlib.asynccontextmanager
    async def live(
        self, namespace: str, task_id: str | None, deployment: str | None
    ) -> AsyncIterator[LiveEvents]:
        """Subscribed on entry: nothing the runs publish after it is missed."""
        self.principal.require("viewer", "reading the event stream")
        self.principal.require_namespace(namespace)

        def wants(e: Any) -> bool:
            return bool(
                e.namespace == namespace
                and (task_id is None or e.task_id == task_id)
                and (deployment is None or e.deployment == deployment)
            )

        with self.hub.live.subscribe(wants) as sub:

            async def events() -> LiveEvents:
                async for e in sub:
                    yield e.to_dict()

            yield events()

    async def aclose(self) -> None:
        return None


def unreachable(url: str, why: object) -> UnavailableError:
    return UnavailableError(
        f"cannot reach the Hub at {url}: start one with `agen up` or pass --hub ({why})", hub=url
    )


def check_hub_url(url: str, where: str) -> str:
    """An http(s) URL with a host, or an InvalidError naming where it came from (before any request)."""
    import httpx

    from agen.errors import InvalidError

    hint = "use a URL such as http://127.0.0.1:7070"
    shown = repr(url) if len(url) <= 80 else repr(url[:76] + "...")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as e:
        raise InvalidError(
            f"{where} {shown} is not a valid URL ({e}); {hint}", field=where
        ) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidError(
            f"{where} {shown} is not an http(s) URL with a host; {hint}", field=where
        )
    return url


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once per process: loading the CA bundle for every
    client costs tens of milliseconds, which a command (or a test making many) pays each time."""
    import httpx

    return httpx.create_ssl_context()


def _plain_http_context() -> ssl.SSLContext:
    """For a Hub at an http:// URL, which speaks no TLS: httpx wants a context anyway, and its default
    loads the system's CA bundle (~26 ms, a tenth of `agen ps`). This one verifies like any client
    context but trusts no CA at all, so if it were ever used for https it would refuse."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def pinned_context(url: str, ca_hash: str) -> ssl.SSLContext:
    """A TLS context that trusts only the Hub CA whose hash is pinned. The CA is fetched from the Hub's
    /ca.pem without verification (it is public), then accepted only if its hash is the pinned one."""
    import httpx

    base = url.rstrip("/")
    try:
        r = httpx.get(f"{base}/ca.pem", verify=False, timeout=10)  # checked against the pin below
    except httpx.TransportError as e:
        raise unreachable(base, type(e).__name__) from None
    if r.status_code != 200:
        raise DeniedError(
            f"the Hub at {base} serves no CA (/ca.pem answered {r.status_code}); it does not run "
            "with --tls, so there is nothing to pin: drop --ca-hash or use its https URL"
        )
    pem = r.text
    try:
        got = ca_hash_of(pem)
    except (ValueError, ssl.SSLError):
        raise DeniedError(f"the Hub at {base} serves a /ca.pem that is not a certificate") from None
    if got != ca_hash:
        raise DeniedError(
            f"the Hub at {base} presents CA {got}, not the pinned {ca_hash}; refusing it. Check "
            "--ca-hash (or AGEN_CA_HASH) against what `agen join-token create` printed on the Hub",
            ca_hash=got,
        )
    return ssl.create_default_context(cadata=pem)


_CERT_ALERTS = ("ALERT_UNKNOWN_CA", "ALERT_BAD_CERTIFICATE", "ALERT_CERTIFICATE", "ALERT_ACCESS")


def _refused_certificate(url: str, e: Exception) -> DeniedError | None:
    """A TLS refusal, not an unreachable Hub: the Hub's certificate does not verify against the CA
    this client trusts, or the Hub's TLS layer refused this client's certificate."""
    text = str(e).upper()
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return DeniedError(
            f"the Hub at {url} presents a certificate that does not verify against the CA this "
            f"client trusts ({str(e)[:160]}); check --hub and --ca-hash"
        )
    if any(alert in text for alert in _CERT_ALERTS):
        return DeniedError(
            f"the Hub at {url} refused this client's TLS certificate ({str(e)[:120]}): only "
            "certificates from that Hub's CA, still valid, are accepted; enrol with that Hub"
        )
    return None


def _transport_error() -> type[Exception]:
    import httpx

    return httpx.TransportError


class HttpTransport:
    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        timeout_s: float = HUB_TIMEOUT_S,
        ca_hash: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``tls``: a context of the caller's own (a Nest's, with its client certificate and the Hub
        CA it pinned at enrolment) instead of one from ``ca_hash`` or the system's CAs."""
        import httpx

        self.url = url.rstrip("/")
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if tls is not None:
            verify = tls
        elif ca_hash:
            verify = pinned_context(self.url, ca_hash)
        elif self.url.lower().startswith("http://"):
            verify = _plain_http_context()
        else:
            verify = _tls_context()
        self._http: httpx.AsyncClient = httpx.AsyncClient(
            base_url=self.url, headers=headers, timeout=timeout_s, verify=verify
        )
        self._timeout_s = timeout_s
        self._headers, self._verify = headers, verify  # for the SSE client (``live``)

    async def call(self, rpc: Rpc[Any, Any], request: BaseModel) -> BaseModel:
        # a long poll (wait_seconds) or a graceful cancel (grace_period_seconds) answers that much later
        wait = float(getattr(request, "wait_seconds", 0) or 0) + float(
            getattr(request, "grace_period_seconds", 0) or 0
        )
        try:
            r = await self._http.post(
                rpc.path,
                content=request.model_dump_json(),
                headers={"Content-Type": "application/json"},
                timeout=self._timeout_s + wait,
            )
        except _transport_error() as e:
            raise _refused_certificate(self.url, e) or unreachable(
                self.url, type(e).__name__
            ) from None
        if r.status_code >= 400:
            try:
                body = r.json()
            except ValueError:
                body = {}
            if not isinstance(body, dict) or "error" not in body:
                raise AgenError(f"{rpc.name}: HTTP {r.status_code} from {self.url}: {r.text[:200]}")
            raise from_dict(body, r.status_code)
        result: BaseModel = rpc.response.model_validate_json(r.content)
        return result

    @contextlib.asynccontextmanager
    async def live(
        self, namespace: str, task_id: str | None, deployment: str | None
    ) -> AsyncIterator[LiveEvents]:
        """The Hub's SSE door (``/api/v1/events``) for live events, read with httpx2's SSE client
        (as the providers read theirs: agen.runner.providers._http), same token and TLS trust."""
        import httpx2

        from agen.domain.live import LIVE_TYPES

        pairs: list[tuple[str, str | int | float | bool | None]] = [
            ("namespace", namespace),
            *(("type", t) for t in LIVE_TYPES),
        ]
        pairs += [("task", task_id)] if task_id else []
        pairs += [("deployment", deployment)] if deployment else []
        timeout = httpx2.Timeout(self._timeout_s, read=None)  # the Hub pings every 15 s
        try:
            async with (
                httpx2.AsyncClient(
                    base_url=self.url, headers=self._headers, verify=self._verify, timeout=timeout
                ) as http,
                http.sse("/api/v1/events", params=httpx2.QueryParams(pairs)) as source,
            ):
                r = source.response
                if r.status_code >= 400:
                    await r.aread()
                    raise from_dict(r.json(), r.status_code)

                async def events() -> LiveEvents:
                    async for sse in source:
                        event = json.loads(sse.data)
                        if isinstance(event, dict) and event.get("seq") is None:
                            yield event

                yield events()
        except httpx2.TransportError as e:
            raise unreachable(self.url, type(e).__name__) from None

    async def aclose(self) -> None:
        await self._http.aclose()


class Client:
    """``await client.call(registry.SubmitTask, SubmitTaskRequest(...))`` -> TaskResponse."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    @classmethod
    def in_process(cls, hub: Hub, principal: Principal | None = None) -> Client:
        return cls(InProcessTransport(hub, principal))

    @classmethod
    def http(
        cls,
        url: str,
        token: str | None,
        *,
        ca_hash: str | None = None,
        timeout_s: float = HUB_TIMEOUT_S,
    ) -> Client:
        """``ca_hash``: trust only the Hub CA with this hash (an https Hub started with --tls)."""
        return cls(HttpTransport(url, token, ca_hash=ca_hash, timeout_s=timeout_s))

    @classmethod
    def from_options(cls, hub: str | None, token: str | None) -> Client:
        """--hub/--token (or AGEN_HUB/AGEN_TOKEN), else the local ``agen up`` from local.json.

        The local admin token is only ever sent to the local Hub's own URL.
        """
        from agen.local import read_local, same_hub

        # Without --hub, local.json is where the Hub is: a broken one is an error, not 127.0.0.1:7070.
        hub, token = hub or None, token or None  # an empty AGEN_HUB / AGEN_TOKEN means unset
        local = read_local(strict=hub is None)
        url = (
            check_hub_url(hub, "--hub")
            if hub
            else (check_hub_url(local.url, "local.json's url") if local else DEFAULT_HUB)
        )
        ca_hash = os.environ.get(CA_HASH_ENV) or None
        if local is not None and same_hub(url, local.url):
            token = local.token if token is None else token
            ca_hash = ca_hash or local.ca_hash
        if ca_hash is not None:
            ca_hash = check_ca_hash(ca_hash, CA_HASH_ENV)
        if token is not None and not _HEADER_SAFE.fullmatch(token):
            from agen.errors import InvalidError

            raise InvalidError(
                "--token (or AGEN_TOKEN) holds spaces or characters a token never has; "
                "paste the token exactly as `agen token create` printed it",
                field="--token",
            )
        return cls.http(url, token, ca_hash=ca_hash, timeout_s=hub_timeout_s())

    @property
    def url(self) -> str | None:
        return self.transport.url if isinstance(self.transport, HttpTransport) else None

    async def call(self, rpc: Rpc[Req, Resp], request: Req) -> Resp:
        result = await self.transport.call(rpc, request)
        assert isinstance(result, rpc.response)
        return result

    def live(
        self, namespace: str, task_id: str | None = None, *, deployment: str | None = None
    ) -> contextlib.AbstractAsyncContextManager[LiveEvents]:
        """``async with client.live(ns, task_id) as events: async for event in events: ...``: what
        the runs of a task (or of a deployment) do as it happens (deltas, model and tool calls;
        agen.domain.live), not stored and best effort. The record of each turn is the run's
        transcript. Subscribing by deployment before submitting a task misses none of its words."""
        transport = self.transport
        if not isinstance(transport, InProcessTransport | HttpTransport):
            raise UnavailableError(
                f"not supported yet: following live events over {type(transport).__name__}"
            )
        return transport.live(namespace, task_id, deployment)

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
