"""Fleet test helpers: fake-model bundles on disk, a Hub over a temp store."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any


def write_bundle(
    root: Path,
    name: str = "echo",
    *,
    script: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
    prompt: str = "You answer briefly.",
    sandbox: dict[str, Any] | None = None,
) -> Path:
    """A fake-model bundle: no script means echo mode (the reply repeats the input); ``sandbox`` is
    harness.json's sandbox block. By default its sandboxed tool servers may write the system temp
    folder (under which a test's tmp_path holds the fixture servers' gates, hold files and effect
    logs); the sandbox's own confinement is tested in tests/integration/test_sandbox.py."""
    fake: dict[str, Any] = {"script": script} if script is not None else {"echo": True}
    harness: dict[str, Any] = {"provider": "fake", "fake": fake}
    # the system temp folder, not the test's own: a path that changes per run would change the
    # bundle's digest, which the TUI snapshots show
    harness["sandbox"] = (
        sandbox if sandbox is not None else {"filesystem": {"write": [tempfile.gettempdir()]}}
    )
    files: dict[str, Any] = {
        "plugin.json": {"name": name, "version": "0.1.0"},
        "x-agen/agent.md": f"---\nname: {name}\n---\n{prompt}\n",
        "x-agen/harness.json": harness,
        "x-agen/config.json": config
        if config is not None
        else {"kind": "pool", "scale": {"min": 1, "max": 2}},
    }
    root.mkdir(parents=True, exist_ok=True)
    for path, value in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return root


def files_b64(root: Path) -> dict[str, str]:
    import base64

    from agen.bundle import walk_bundle

    return {p: base64.b64encode(d).decode() for p, d in walk_bundle(root).items()}


async def join_token(hub: Any) -> str:
    """A fresh single-use join token, made by the Hub's local admin (`agen join-token create`)."""
    from agen.api import registry as r
    from agen.client import Client
    from agen.wire.nests import CreateJoinTokenRequest

    return (await Client.in_process(hub).call(r.CreateJoinToken, CreateJoinTokenRequest())).token


async def enrolled_nest(hub: Any, name: str = "nest-a") -> tuple[str, str]:
    """A Nest enrolled the way `agen nest run --join-token` does it: (its nest id, its credential)."""
    from agen.api import registry as r
    from agen.client import Client
    from agen.wire.nests import EnrolNestRequest

    joiner = await hub.auth.authenticate(await join_token(hub), hub.clock())
    resp = await Client.in_process(hub, joiner).call(r.EnrolNest, EnrolNestRequest(name=name))
    return resp.nest_id, resp.token
