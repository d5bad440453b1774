"""The built-in ``fetch`` tool: GET one URL of an allowed host and return its text.

On only when ``builtinTools.fetch`` names hosts; every URL, and every redirect it leads to, is
checked with agen.sandbox.policy.host_allowed, the rule the sandbox's egress proxy applies, so
the two never disagree on what a pattern means. Bounded: at most ``maxBytes`` of the body are read
(the rest is cut, and said so) within ``timeout`` for the whole fetch, redirects included (at most
5). HTML comes back as its text (scripts and styles dropped), JSON and text as they are; other
content types are refused by name. Its output counts as untrusted (it is whatever the web says).
"""

from __future__ import annotations

import asyncio
import html.parser
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from agen.bundle.checks import FETCH
from agen.bundle.config import FetchBuiltin
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult, Toolset
from agen.sandbox.policy import host_allowed

MAX_REDIRECTS = 5
_TEXTUAL = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "+json",
    "+xml",
)
_BLOCK = {
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "section",
    "article",
    "table",
    "ul",
    "ol",
}


class _Text(html.parser.HTMLParser):
    """The visible text of an HTML page, a line per block element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        joined = "".join(self.parts)
        lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in joined.splitlines())
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return parser.text()


class FetchTool(Tool):
    """GET a URL of an allowed host; its text."""

    def __init__(self, spec: FetchBuiltin) -> None:
        self.name = FETCH
        hosts = ", ".join(spec.allow)
        self.description = (
            f"Fetch a web page or file by URL (http or https) and return its text (HTML as plain "
            f"text). Only these hosts: {hosts}. At most {spec.max_bytes} bytes are read."
        )
        self.input_schema = {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "an http(s) URL"}},
            "required": ["url"],
        }
        self.read_only = True
        self.untrusted_output = True
        self.config = spec

    def _check(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolError(f"{url!r} is not an http(s) URL; give one like https://host/path")
        if not host_allowed(parts.hostname, self.config.allow):
            raise ToolError(
                f"{parts.hostname} is not in builtinTools.fetch.allow ({', '.join(self.config.allow)}); "
                "fetch only those hosts"
            )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ToolError("url must be a non-empty string")
        timeout = self.config.timeout_ms / 1000
        try:
            return await asyncio.wait_for(self._fetch(url.strip()), timeout)
        except TimeoutError:
            raise ToolError(
                f"fetching {url} took longer than {timeout:g}s; it was stopped"
            ) from None

    async def _fetch(self, url: str) -> ToolResult:
        import httpx

        async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                self._check(url)
                try:
                    async with client.stream(
                        "GET", url, headers={"User-Agent": "agen-fetch"}
                    ) as resp:
                        if resp.is_redirect and "location" in resp.headers:
                            url = urljoin(url, resp.headers["location"])
                            continue
                        return await self._read(url, resp)
                except httpx.HTTPError as e:
                    raise ToolError(f"fetching {url} failed: {type(e).__name__}: {e}") from None
        raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects; not followed")

    async def _read(self, url: str, resp: Any) -> ToolResult:
        kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind and not any(k in kind for k in _TEXTUAL):
            raise ToolError(f"{url} is {kind}, not text; fetch returns text only")
        body = bytearray()
        cut = False
        async for chunk in resp.aiter_bytes():
            body += chunk
            if len(body) > self.config.max_bytes:
                del body[self.config.max_bytes :]
                cut = True
                break
        text = body.decode(resp.encoding or "utf-8", "replace")
        if "html" in kind:
            text = html_text(text)
        head = f"{url} ({resp.status_code}, {kind or 'no content type'})"
        note = f"\n[cut at {self.config.max_bytes} bytes]" if cut else ""
        return ToolResult(f"{head}\n\n{text}{note}", is_error=resp.status_code >= 400)


class FetchToolset(Toolset):
    """The fetch tool, for a bundle whose builtinTools.fetch names hosts."""

    def __init__(self, spec: FetchBuiltin) -> None:
        self.config = spec

    @property
    def label(self) -> str:
        return "built-in fetch tool"

    async def start(self) -> list[Tool]:
        return [FetchTool(self.config)]
