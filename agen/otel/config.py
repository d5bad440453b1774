"""Where traces go: the Hub-wide OTLP configuration, read once from the environment at ``agen up``.

``AGEN_OTLP_ENDPOINT``  base URL of an OTLP/HTTP receiver (``/v1/traces`` is added unless present)
``AGEN_OTLP_HEADERS``   ``key=value,key2=value2`` (values percent-decoded, as OTEL_EXPORTER_OTLP_HEADERS)
``AGEN_OTLP_CONTENT``   ``1``: also export message contents (stored redacted; exported as stored)
``AGEN_OTLP_TIMEOUT``   seconds one export (with the exporter's retries) may take, default 10
``AGEN_OTLP_QUEUE``     spans held waiting to be sent, default 2048; past it they are counted dropped

Per-namespace destinations are not supported: one destination serves the whole Hub.
Header values are secrets (API keys): ``describe()`` shows only their names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

from agen.errors import InvalidError

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class OtlpConfig:
    endpoint: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    content: bool = False
    timeout_s: float = 10.0
    queue_size: int = 2048
    batch_size: int = 512

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OtlpConfig | None:
        """The configuration, None when export is off, InvalidError naming the variable when wrong."""
        env = os.environ if env is None else env
        base = env.get("AGEN_OTLP_ENDPOINT", "").strip()
        if not base:
            return None
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidError(
                f"AGEN_OTLP_ENDPOINT {base!r} is not an http(s) URL; give e.g. http://127.0.0.1:4318",
                field="AGEN_OTLP_ENDPOINT",
            )
        path = parts.path.rstrip("/")
        endpoint = urlunsplit(
            parts._replace(path=path if path.endswith(TRACES_PATH) else path + TRACES_PATH)
        )
        return cls(
            endpoint=endpoint,
            headers=parse_headers(env.get("AGEN_OTLP_HEADERS", "")),
            content=_flag(env, "AGEN_OTLP_CONTENT"),
            timeout_s=_number(env, "AGEN_OTLP_TIMEOUT", 10.0),
            queue_size=int(_number(env, "AGEN_OTLP_QUEUE", 2048)),
        )

    def describe(self) -> str:
        """For logs, /health and GetMetrics: the endpoint without credentials or query, and header
        names, never header values."""
        parts = urlsplit(self.endpoint)
        where = f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
        names = ", ".join(f"{k}=***" for k in sorted(self.headers))
        return (
            where
            + (f" (headers {names})" if names else "")
            + (" with contents" if self.content else "")
        )


def parse_headers(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, item in enumerate(filter(None, (p.strip() for p in text.split(","))), 1):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():  # the item itself is not shown: it may be the secret
            raise InvalidError(
                f"AGEN_OTLP_HEADERS: item {n} is not key=value; "
                "give e.g. Authorization=Basic%20<base64>",
                field="AGEN_OTLP_HEADERS",
            )
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise InvalidError(f"{name}={value!r}: use 1 or 0", field=name)


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InvalidError(f"{name}={text!r}: give a positive number", field=name)
    return value
