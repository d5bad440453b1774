"""The local ``agen up``'s files in AGEN_HOME: local.json (Hub URL + admin token) and its lock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agen._home import agen_home, write_private


@dataclass(frozen=True)
class LocalConfig:
    url: str
    token: str
    pid: int | None = None


def local_json_path(home: Path | None = None) -> Path:
    return (home or agen_home()) / "local.json"


def read_local(home: Path | None = None) -> LocalConfig | None:
    """This home's (or ``home``'s) local.json, or None when there is none yet."""
    try:
        data = json.loads(local_json_path(home).read_text())
        return LocalConfig(url=str(data["url"]), token=str(data["token"]), pid=data.get("pid"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_local(config: LocalConfig) -> None:
    write_private(local_json_path(), json.dumps({"url": config.url, "token": config.token, "pid": config.pid}) + "\n")


def same_hub(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")
