"""x-agen/harness.json ``sandbox``: how the commands and stdio servers an agent starts are confined.

On by default: the built-in workspace ``run`` tool and every stdio MCP server run under
bubblewrap (agen/sandbox) with the run's workspace as the only writable folder and no network.
``filesystem``, ``network`` and ``limits`` widen or bound that for all of them; ``servers.<name>``
overrides any of them for one mcp.json server and grants it variables of agen's environment.
``"enabled": false`` runs them unconfined, the way to run where bubblewrap is missing: a bundle
that needs the sandbox is refused there (``sandboxed_parts`` says what needs it), never run
unconfined.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from agen.bundle._base import AgenModel
from agen.sandbox.policy import valid_host_pattern


def _check_path(value: str) -> str:
    if not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise ValueError(f"{value!r} must be an absolute path or start with ~/")
    if value.rstrip("/") == "" or ".." in value.split("/"):
        raise ValueError(f"{value!r} must name a folder or file below /, without '..'")
    return value


def _check_host(value: str) -> str:
    if not valid_host_pattern(value):
        raise ValueError(
            f"{value!r} is not a host pattern: give a host name (api.github.com), "
            "*. and a domain (*.pypi.org) or an IPv4 address"
        )
    return value.lower()


SandboxPath = Annotated[str, AfterValidator(_check_path)]
HostPattern = Annotated[str, AfterValidator(_check_host)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class SandboxFiles(AgenModel):
    """Folders and files visible in the sandbox besides the system folders and the workspace."""

    read: list[SandboxPath] = Field(
        [],
        description="paths bound read-only (absolute or ~/…; ~ is the home folder, otherwise "
        "hidden); a path that does not exist is skipped",
    )
    write: list[SandboxPath] = Field(
        [], description="paths bound writable besides the workspace (absolute or ~/…)"
    )


class SandboxNetwork(AgenModel):
    """Which hosts the sandbox may reach, through agen's egress proxy (HTTP and HTTPS only)."""

    allow: list[HostPattern] = Field(
        [],
        description='host names (exact) or *.domain patterns, e.g. ["api.github.com", "*.pypi.org"]; '
        "empty: no network at all",
    )


class SandboxLimits(AgenModel):
    """Resource limits of each process in the sandbox (setrlimit)."""

    cpu_seconds: int | None = Field(
        600, ge=1, description="CPU seconds a process may use (RLIMIT_CPU); null: no limit"
    )
    memory_mb: int | None = Field(
        8192,
        ge=64,
        description="address space a process may map, in MiB (RLIMIT_AS); null: no limit",
    )


class ServerSandbox(AgenModel):
    """One mcp.json stdio server's sandbox; unset fields are the bundle's."""

    enabled: bool | None = Field(None, description="false: this server runs unconfined")
    filesystem: SandboxFiles | None = Field(None, description="replaces the bundle's filesystem")
    network: SandboxNetwork | None = Field(None, description="replaces the bundle's network")
    limits: SandboxLimits | None = Field(None, description="replaces the bundle's limits")
    env: list[EnvName] = Field(
        [],
        description="variables of agen's environment this server gets besides PATH, LANG, LC_ALL "
        "and TZ (secrets go in its mcp.json env as ${NAME})",
    )


class Sandbox(AgenModel):
    """harness.json ``sandbox``: the confinement of run commands and stdio MCP servers."""

    enabled: bool = Field(
        True,
        description="false: run commands and stdio servers unconfined (where bubblewrap is missing); "
        "true needs bubblewrap (Linux) and is refused at deploy without it",
    )
    filesystem: SandboxFiles = Field(
        default_factory=SandboxFiles,
        description="paths visible besides system folders and the workspace",
    )
    network: SandboxNetwork = Field(
        default_factory=SandboxNetwork, description="hosts reachable through the egress proxy"
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits, description="per-process limits")
    servers: dict[str, ServerSandbox] = Field(
        {}, description="per mcp.json stdio server: overrides and the variables it is granted"
    )

    def for_server(self, name: str) -> ServerSandbox:
        return self.servers.get(name) or ServerSandbox()

    def server_enabled(self, name: str) -> bool:
        own = self.for_server(name).enabled
        return self.enabled if own is None else own


def sandboxed_parts(
    sandbox: Sandbox, builtins: tuple[str, ...], stdio_servers: list[str]
) -> list[str]:
    """What of a bundle runs in the sandbox (empty: it needs no bubblewrap): the built-in ``run``
    tool and each stdio server, unless turned off."""
    parts = ["the built-in workspace run tool"] if sandbox.enabled and "run" in builtins else []
    parts += [f"mcp.json server {n!r}" for n in stdio_servers if sandbox.server_enabled(n)]
    return parts


def check_sandbox_servers(
    sandbox: Sandbox, stdio_servers: list[str], http_servers: list[str]
) -> list[str]:
    """``sandbox.servers`` names only mcp.json stdio servers (an HTTP server starts no process)."""
    problems = []
    for name in sandbox.servers:
        if name in http_servers:
            why = "is an HTTP server: agen starts no process for it, so there is nothing to sandbox"
        elif name not in stdio_servers:
            known = ", ".join(stdio_servers) or "none"
            why = f"is not an mcp.json server (stdio servers: {known})"
        else:
            continue
        problems.append(f"x-agen/harness.json: sandbox.servers.{name}: {why}")
    return problems
