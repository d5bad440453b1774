"""``agen ui``: the TUI served to a browser (textual-serve), behind a sign-in link, on loopback.

textual-serve runs one ``agen tui`` process per browser connection and relays its screen over a
websocket. It has no access control of its own, so every request here passes a gate first: the link
``agen ui`` prints carries a one-time sign-in code; presenting it once sets an HttpOnly session cookie
(SameSite=Strict) and redirects to a URL without the code. Without the cookie nothing is served (no
page, no websocket), and a websocket from another origin is refused. The ``agen tui`` processes talk
to the Hub with the token ``agen ui`` was given (checked against the Hub before serving), passed in
their environment, never on a command line.
"""

from __future__ import annotations

import os
import secrets
import shlex
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web
from textual_serve.server import Server

COOKIE = "agen_ui_session"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class SignIn:
    """One-time sign-in codes and the sessions they opened (in memory: a restart signs everyone out)."""

    def __init__(self) -> None:
        self.codes: set[str] = set()
        self.sessions: set[str] = set()

    def new_code(self) -> str:
        code = secrets.token_urlsafe(24)
        self.codes.add(code)
        return code

    def redeem(self, code: str) -> str | None:
        """A new session for an unused code (which is then spent), else None."""
        for known in list(self.codes):
            if secrets.compare_digest(known, code):
                self.codes.discard(known)
                session = secrets.token_urlsafe(32)
                self.sessions.add(session)
                return session
        return None

    def valid(self, session: str | None) -> bool:
        return bool(session) and any(
            secrets.compare_digest(s, session or "") for s in self.sessions
        )


class UiServer(Server):
    """textual-serve's server with the sign-in gate in front of every route."""

    def __init__(self, host: str, port: int, sign_in: SignIn) -> None:
        super().__init__(
            f"{shlex.quote(sys.executable)} -m agen tui", host=host, port=port, title="agen"
        )
        self.sign_in = sign_in
        self.link = f"{self.public_url}/?code={sign_in.new_code()}"

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.gate)
        return app

    @web.middleware
    async def gate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        code = request.query.get("code")
        if code is not None:
            session = self.sign_in.redeem(code)
            if session is None:
                return web.Response(
                    status=403,
                    text="agen ui: this sign-in link was used already or is wrong; "
                    "stop agen ui and start it again for a new link\n",
                )
            response = web.HTTPSeeOther("/")
            response.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/")
            return response
        if not self.sign_in.valid(request.cookies.get(COOKIE)):
            return web.Response(
                status=401,
                text="agen ui: not signed in; open the sign-in link `agen ui` printed\n",
            )
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin is not None and origin != self.public_url:
            return web.Response(status=403, text=f"agen ui: websocket from {origin} refused\n")
        return await handler(request)

    async def on_startup(self, app: web.Application) -> None:
        print(f"agen ui: open {self.link}", file=sys.stderr, flush=True)
        print(
            "agen ui: the link signs in one browser once; Ctrl-C stops serving",
            file=sys.stderr,
            flush=True,
        )

    def initialize_logging(self) -> None:
        """No access log: the sign-in code is in the first request's URL."""


def serve_ui(hub_url: str, token: str | None, host: str, port: int) -> None:
    """Serve until Ctrl-C; each browser connection gets an ``agen tui`` on ``hub_url`` with ``token``."""
    os.environ["AGEN_HUB"] = hub_url
    if token is not None:
        os.environ["AGEN_TOKEN"] = token
    else:
        os.environ.pop("AGEN_TOKEN", None)
    UiServer(host, port, SignIn()).serve()
