"""Build small bundles for tests: a valid minimal bundle plus per-file overrides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MINIMAL: dict[str, Any] = {
    "plugin.json": {"name": "hello", "version": "0.1.0", "description": "says hello"},
    "x-agen/agent.md": "---\nname: hello\ndescription: greets\n---\nYou greet people politely.\n",
    "x-agen/harness.json": {"provider": "fake"},
    "x-agen/config.json": {"kind": "pool", "scale": {"min": 0, "max": 2}},
}
SHORT = {
    "plugin": "plugin.json",
    "mcp": "mcp.json",
    "agent": "x-agen/agent.md",
    "harness": "x-agen/harness.json",
    "config": "x-agen/config.json",
    "secrets": "x-agen/secrets.json",
}


def bundle_files(files: dict[str, Any] | None = None, **short: Any) -> dict[str, bytes]:
    """The minimal bundle's files map with overrides.

    ``plugin=``, ``mcp=``, ``agent=``, ``harness=``, ``config=``, ``secrets=`` replace those files;
    ``files={"path": value}`` sets any other path. Dicts and lists are written as JSON,
    str as UTF-8, bytes as is; None deletes the file.
    """
    spec: dict[str, Any] = dict(MINIMAL)
    spec.update({SHORT[k]: v for k, v in short.items()})
    spec.update(files or {})
    out: dict[str, bytes] = {}
    for path, value in spec.items():
        if value is None:
            continue
        if isinstance(value, bytes):
            out[path] = value
        elif isinstance(value, str):
            out[path] = value.encode()
        else:
            out[path] = json.dumps(value, indent=2).encode()
    return out


def make_bundle(tmp_path: Path, files: dict[str, Any] | None = None, **short: Any) -> Path:
    """Write the minimal bundle (with overrides, see ``bundle_files``) under tmp_path/bundle."""
    root = tmp_path / "bundle"
    for path, data in bundle_files(files, **short).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root
