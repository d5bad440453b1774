"""Models of the standard Agent Plugins files: plugin.json, mcp.json, SKILL.md front matter.

Unknown fields are kept (``extra="allow"``): other tools own this format and may add to it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Tag, WithJsonSchema

from agen.bundle._base import McpUrl, StandardModel, shaped

_BUNDLE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_SERVER_NAME = re.compile(r"^[a-z0-9_-]+$")


def _check_bundle_name(value: str) -> str:
    if not _BUNDLE_NAME.match(value):
        raise ValueError(
            "must be 1-63 lowercase letters, digits and '-', starting with a letter "
            f'(got "{value}")'
        )
    return value


BundleName = Annotated[
    str,
    AfterValidator(_check_bundle_name),
    WithJsonSchema({"type": "string", "pattern": _BUNDLE_NAME.pattern}),
]


class Author(StandardModel):
    name: str = Field(description="who wrote the bundle")
    email: str | None = Field(None, description="their email")
    url: str | None = Field(None, description="their web page")


class PluginManifest(StandardModel):
    """plugin.json: the bundle's name (also its deployment's default name) and metadata."""

    schema_: str | None = Field(
        default=None, alias="$schema", description="a JSON Schema URL for editors; ignored by agen"
    )
    name: BundleName = Field(
        description='the bundle name, and the deployment name by default: lowercase letters, digits and "-"'
    )
    version: str | None = Field(
        None,
        description="the bundle's own version, for people (agen identifies a bundle by its digest)",
    )
    description: str | None = Field(None, description="what the agent does, in a sentence")
    author: str | Author | None = Field(None, description='a name, or {"name", "email", "url"}')


_STARTUP = "Milliseconds agen waits for the server to start and answer initialize (default 30000, at most 600000)."


class StdioServer(StandardModel):
    """An MCP server started as a child process; ``command: "agen"`` means this agen executable."""

    type: Literal["stdio"] = Field(
        "stdio", description="stdio: a child process speaking MCP on stdin/stdout"
    )
    command: str = Field(
        min_length=1,
        description='the program to start; "agen" is this agen executable (agen mcp workspace, agen mcp sql)',
    )
    args: list[str] = Field(
        [],
        description="its arguments; ${NAME} expands to a declared secret, ${WORKSPACE} to the task's folder",
    )
    env: dict[str, str] = Field(
        {}, description="extra environment variables; ${NAME} expands to a declared secret"
    )
    cwd: str | None = Field(None, description="the folder it starts in")
    startup_timeout_ms: int | None = Field(default=None, gt=0, le=600_000, description=_STARTUP)


class HttpServer(StandardModel):
    """An MCP server reached over streamable HTTP."""

    type: Literal["http", "streamable-http"] = Field(
        description="http or streamable-http: an MCP server reached over HTTP"
    )
    url: McpUrl = Field(
        description="the server's URL; ${AGEN_HUB_URL}/mcp is the Hub running the agent (its tools)"
    )
    headers: dict[str, str] = Field(
        {},
        description='request headers, e.g. {"Authorization": "Bearer ${TOKEN}"} (${NAME}: a declared secret); '
        "without an Authorization header, the OAuth login `agen mcp login SERVER` stored for this URL is used",
    )
    startup_timeout_ms: int | None = Field(default=None, gt=0, le=600_000, description=_STARTUP)


def _server_shape(value: Any) -> str | None:
    if isinstance(value, StdioServer | HttpServer):  # serialising a parsed model
        return "stdio" if isinstance(value, StdioServer) else "http"
    if not isinstance(value, dict):
        return None
    kind = value.get("type", "stdio" if "command" in value else None)
    return {"stdio": "stdio", "http": "http", "streamable-http": "http"}.get(str(kind))


McpServer = Annotated[
    Annotated[StdioServer, Tag("~stdio")] | Annotated[HttpServer, Tag("~http")],
    shaped(
        _server_shape,
        ("stdio", "http"),
        'a stdio server {"command", "args"} or an http server {"type": "http", "url"}',
    ),
]


def _check_server_name(value: str) -> str:
    if not _SERVER_NAME.match(value):
        raise ValueError(f'server names use a-z, 0-9, _ and - only (got "{value}")')
    return value


ServerName = Annotated[
    str,
    AfterValidator(_check_server_name),
    WithJsonSchema({"type": "string", "pattern": _SERVER_NAME.pattern}),
]


class McpConfig(StandardModel):
    """mcp.json: the MCP servers whose tools the agent may call."""

    mcp_servers: dict[ServerName, McpServer] = Field(
        {},
        description="MCP servers by name; their tools are named server.tool (the model sees server_tool)",
    )


class SkillFrontMatter(StandardModel):
    """skills/<name>/SKILL.md front matter: what the skill is, so the model knows when to load it."""

    name: str = Field(min_length=1, description="the skill's name")
    description: str = Field(
        min_length=1,
        description="when to use it: the agent sees every skill's description and loads the body on demand",
    )
