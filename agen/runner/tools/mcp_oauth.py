"""OAuth for remote MCP servers: ``agen mcp login`` and the tokens runs use, on the ``mcp`` SDK's
OAuth client (``mcp.client.auth.OAuthClientProvider``: discovery, dynamic client registration,
PKCE, the token exchange and refresh).

``agen mcp login SERVER`` registers agen as a public client (no secret; PKCE) with a loopback
redirect ``http://127.0.0.1:<free port>/callback``, prints the authorization URL (and opens a
browser only where there is a display), catches the code on that port and stores what it got.

Tokens and the registration are kept per server URL in ``$AGEN_HOME/mcp-oauth/<sha256(url)>.json``
(0600, in a 0700 folder), each value sealed with AES-256-GCM (agen.crypto.sealing, the scheme platform
secrets use) under a key of this home (``mcp-oauth/key``, 0600, made by the first login), bound to
the URL, so a file copied to another name or home does not open. The key sits beside the files:
sealing keeps the tokens out of anything that copies the files without the key (a backup of one
folder, a log), not from a user who can read the whole home. Runs read them on the machine (and
AGEN_HOME) that runs them: a Nest on another host needs its own login.

A run's connection uses them when its mcp.json server sends no Authorization header of its own and
a login exists for its URL. The SDK refreshes an access token past its expiry with the refresh
token and hands the new one to ``SealedTokenStorage.set_tokens``; when that fails (or the server
answers 401, e.g. the token was revoked) the SDK would start a new authorization, which a run
cannot do: ``LoginNeeded`` ends the attempt, and the call fails with a one-line error naming
``agen mcp login``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agen.crypto.sealing import WrongKey, open_with, seal_with
from agen.errors import AgenError, InvalidError, UnavailableError
from agen.util.home import agen_home, write_private

FOLDER = "mcp-oauth"
KEY_FILE = "key"
INFO = b"agen mcp oauth v1"
CALLBACK_PATH = "/callback"


class LoginNeeded(Exception):
    """A run's OAuth token expired (or was revoked) and could not be refreshed: a person must log in again."""


class _NoLoginTraceback(logging.Filter):
    """Drop the SDK's traceback for a flow ``LoginNeeded`` ended: the call's error says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, LoginNeeded)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_NoLoginTraceback())


def folder(home: Path | None = None) -> Path:
    return (home or agen_home()) / FOLDER


def _key(home: Path | None, *, create: bool) -> bytes | None:
    path = folder(home) / KEY_FILE
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        if not create:
            return None
    except (OSError, ValueError) as e:
        raise InvalidError(
            f"{path}: cannot read the MCP login key ({e}); remove the folder {path.parent} and run "
            "agen mcp login again"
        ) from None
    write_private(path, secrets.token_bytes(32).hex())
    return bytes.fromhex(path.read_text().strip())


class SealedTokenStorage:
    """The SDK's ``TokenStorage`` protocol over one sealed file per server URL.

    ``fresh``: start without the stored registration and tokens (a login registers again, since its
    redirect URI's port is new each time, and asks for new tokens). ``expires_at`` is kept beside the tokens (the SDK's token only says
    ``expires_in``), so a later process knows when to refresh.
    """

    def __init__(self, url: str, home: Path | None = None, *, fresh: bool = False) -> None:
        self.url = url
        self.home = home
        self.path = folder(home) / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"
        self._fresh = fresh

    def exists(self) -> bool:
        return self.path.is_file()

    @property
    def fresh(self) -> bool:
        """True until this storage was given tokens (a login that got none stored nothing)."""
        return self._fresh

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise InvalidError(
                f"{self.path}: the stored MCP login for {self.url} cannot be read ({e}); run agen mcp "
                "login again"
            ) from None
        return data if isinstance(data, dict) else {}

    def _open(self, field: str) -> str | None:
        stored = self._read().get(field)
        if not isinstance(stored, str):
            return None
        key = _key(self.home, create=False)
        if key is None:
            return None
        try:
            return open_with(key, f"mcp_oauth/{self.url}/{field}", stored, INFO)
        except WrongKey:
            raise InvalidError(
                f"{self.path}: the stored MCP login for {self.url} does not open with this home's "
                f"key ({folder(self.home) / KEY_FILE}); run agen mcp login again"
            ) from None

    def _save(self, **fields: Any) -> None:
        key = _key(self.home, create=True)
        assert key is not None
        data = self._read()
        data["url"] = self.url
        for field, value in fields.items():
            if field in ("tokens", "client"):
                value = seal_with(key, f"mcp_oauth/{self.url}/{field}", value, INFO)
            data[field] = value
        write_private(self.path, json.dumps(data, indent=2) + "\n")

    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        if self._fresh:
            return None
        raw = self._open("tokens")
        return OAuthToken.model_validate_json(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        expires = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._fresh = False
        self._save(tokens=tokens.model_dump_json(), expires_at=expires, saved_ms=_now_ms())

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self._fresh:
            return None
        raw = self._open("client")
        return OAuthClientInformationFull.model_validate_json(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        self._save(client=client_info.model_dump_json())


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def client_metadata(redirect_uri: str) -> Any:
    """What agen registers as: a public native client (no secret, PKCE) with a loopback redirect."""
    from mcp.shared.auth import OAuthClientMetadata

    return OAuthClientMetadata.model_validate(
        {
            "client_name": "agen",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    )


def run_auth(name: str, url: str, on_login_needed: Callable[[str], None]) -> Any:
    """The SDK's OAuth client for a run's connection to ``url``, or None when nobody logged in to it.
    It refreshes with the stored refresh token; a new authorization (which needs a person) calls
    ``on_login_needed`` with the message and raises ``LoginNeeded`` instead."""
    storage = SealedTokenStorage(url)
    if not storage.exists():
        return None
    from mcp.client.auth import OAuthClientProvider

    message = (
        f"MCP server {name} needs a new login: its OAuth access token expired or was revoked and "
        f"could not be refreshed; run `agen mcp login {name}` in the bundle's folder, then try again"
    )

    async def no_person(_url: str) -> None:
        on_login_needed(message)
        raise LoginNeeded(message)

    async def no_code() -> Any:  # never reached: no_person raised first
        raise LoginNeeded(message)

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=client_metadata("http://127.0.0.1/callback"),
        storage=storage,
        redirect_handler=no_person,
        callback_handler=no_code,
    )
    # The SDK learns a token's expiry only from a response it received itself; tell it the stored
    # one, so a token that expired since the login is refreshed before it is sent.
    provider.context.token_expiry_time = storage.expires_at()
    return provider


class LoopbackCallback:
    """The redirect target of a login: a one-request HTTP server on 127.0.0.1 that catches the code."""

    def __init__(self) -> None:
        self.result: asyncio.Future[Any] | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def __aenter__(self) -> LoopbackCallback:
        self.result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.split(" ")
            target = urlsplit(parts[1] if len(parts) > 1 else "")
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            if target.path != CALLBACK_PATH or not ({"code", "error"} & set(query)):
                status, body = "404 Not Found", "This is agen's login callback; nothing here."
            elif "error" in query:
                what = query.get("error_description") or query["error"]
                status, body = (
                    "400 Bad Request",
                    f"The login was refused: {what}. Back to the terminal.",
                )
                self._settle(
                    exc=InvalidError(f"the authorization server refused the login: {what}")
                )
            else:
                status, body = "200 OK", "agen is logged in. You can close this window."
                self._settle(
                    AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                )
            data = body.encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            writer.close()

    def _settle(self, value: Any = None, exc: BaseException | None = None) -> None:
        if self.result is None or self.result.done():
            return
        if exc is not None:
            self.result.set_exception(exc)
        else:
            self.result.set_result(value)


async def login(
    name: str,
    url: str,
    *,
    show: Callable[[str], Awaitable[None]],
    timeout_s: float = 300.0,
    headers: dict[str, str] | None = None,
) -> int:
    """Run the authorization flow against ``url`` and store the tokens; returns how many tools the
    server lists once logged in. ``show`` gets the authorization URL (print it, open a browser)."""
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client

    from agen.runner.tools.mcp_conn import MCP_HTTP_READ_S, MCP_HTTP_TIMEOUT_S

    async with LoopbackCallback() as callback:
        assert callback.result is not None
        waiting = callback.result

        async def wait_for_code() -> Any:
            try:
                return await asyncio.wait_for(asyncio.shield(waiting), timeout_s)
            except TimeoutError:
                raise InvalidError(
                    f"no login came back to {callback.redirect_uri} within {timeout_s:g}s; run agen "
                    "mcp login again and open the URL it prints"
                ) from None

        storage = SealedTokenStorage(url, fresh=True)
        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=client_metadata(callback.redirect_uri),
            storage=storage,
            redirect_handler=show,
            callback_handler=wait_for_code,
        )
        http = httpx2.AsyncClient(  # as a run's connection makes it (ServerConn), with the login
            headers=headers or {},
            timeout=httpx2.Timeout(MCP_HTTP_TIMEOUT_S, read=MCP_HTTP_READ_S),
            auth=provider,
        )
        try:
            async with http, Client(streamable_http_client(url, http_client=http), cache=None) as c:
                listed = await c.list_tools()
        except Exception as e:  # the SDK's task groups wrap what failed: say the one cause
            from agen.runner.tools.mcp_conn import describe

            cause: BaseException = e
            while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
                cause = cause.exceptions[0]
            if isinstance(cause, AgenError):
                raise cause from None
            raise UnavailableError(
                f"logging in to MCP server {name} ({url}) failed: {describe(cause)}; check the URL "
                "and that the server is up and supports MCP authorization"
            ) from None
        if storage.fresh:  # it never asked for a login: nothing to keep
            raise InvalidError(
                f"MCP server {name} ({url}) answered without asking for a login, so there is "
                "nothing to store: it needs no OAuth (or takes a header; see mcp.json headers)"
            )
    return len(listed.tools)
