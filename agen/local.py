"""The local ``agen up``'s files in AGEN_HOME: local.json (Hub URL + admin token) and its lock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agen.errors import InvalidError
from agen.util.home import agen_home, write_private


@dataclass(frozen=True)
class LocalConfig:
    url: str
    token: str
    pid: int | None = None
    ca_hash: str | None = None  # `agen hub serve --tls`: the CA the local CLI pins


def local_json_path(home: Path | None = None) -> Path:
    return (home or agen_home()) / "local.json"


def read_local(home: Path | None = None, *, strict: bool = False) -> LocalConfig | None:
    """This home's (or ``home``'s) local.json, or None when there is none yet.

    With ``strict`` (every CLI command that looks for the Hub), a local.json that exists but cannot be
    used is an InvalidError naming the file: silently falling back to 127.0.0.1:7070 would talk to
    whatever listens there, with no token. `agen up` itself reads it leniently, since it rewrites it.
    """
    try:
        return parse_local(local_json_path(home))
    except InvalidError:
        if strict:
            raise
        return None


def parse_local(path: Path) -> LocalConfig | None:
    fix = "delete it (agen up rewrites it) or fix it"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InvalidError(
            f"{path} is a folder, not agen up's local.json; {fix}", file=str(path)
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidError(f"{path} cannot be read ({e}); {fix}", file=str(path)) from None
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidError(f"{path} is not valid JSON; {fix}", file=str(path)) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("url"), str)
        or not isinstance(data.get("token"), str)
    ):
        raise InvalidError(
            f'{path} is not a JSON object with "url" and "token" strings; {fix}', file=str(path)
        )
    pid, ca_hash = data.get("pid"), data.get("ca_hash")
    return LocalConfig(
        url=data["url"],
        token=data["token"],
        pid=pid if isinstance(pid, int) else None,
        ca_hash=ca_hash if isinstance(ca_hash, str) else None,
    )


def write_local(config: LocalConfig) -> None:
    write_private(
        local_json_path(),
        json.dumps(
            {"url": config.url, "token": config.token, "pid": config.pid, "ca_hash": config.ca_hash}
        )
        + "\n",
    )


def same_hub(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")
