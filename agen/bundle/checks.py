"""Checks that span files (secret references, skills, bundle paths) and the warnings list.

They run after every file parsed on its own, so each check can rely on the models.
"""

from __future__ import annotations

import difflib
import fnmatch
import posixpath
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agen.bundle.harness import DEFAULT_KEY_SECRET
from agen.bundle.problems import problem
from agen.bundle.standard import StdioServer

if TYPE_CHECKING:
    from agen.bundle.agent import AgentFrontMatter, Secrets
    from agen.bundle.config import Config
    from agen.bundle.harness import Harness
    from agen.bundle.standard import McpConfig

_REF = re.compile(r"\$\{([^}]*)\}")
PLACEHOLDERS = frozenset({"WORKSPACE"})
"""${...} names agen fills in itself; they need no secret."""

MCP, HARNESS, CONFIG, AGENT, SECRETS = (
    "mcp.json",
    "x-agen/harness.json",
    "x-agen/config.json",
    "x-agen/agent.md",
    "x-agen/secrets.json",
)


def _undeclared(name: str, secrets: Secrets) -> str:
    have = ", ".join(sorted(secrets.secrets)) or "none declared"
    return f"secret {name} is not declared in {SECRETS} (have: {have})"


def check_mcp_secrets(mcp: McpConfig, secrets: Secrets) -> list[str]:
    """Every ${NAME} in a server's env or headers must name a declared secret."""
    out: list[str] = []
    for server_name, server in mcp.mcp_servers.items():
        field = "env" if isinstance(server, StdioServer) else "headers"
        values = server.env if isinstance(server, StdioServer) else server.headers
        for key, value in values.items():
            for ref in _REF.findall(value):
                path = f"mcpServers.{server_name}.{field}.{key}"
                if not re.fullmatch(r"[A-Z][A-Z0-9_]*", ref):
                    out.append(problem(MCP, path, f"${{{ref}}} is not a secret name (A-Z, 0-9, _)"))
                elif ref not in secrets.secrets and ref not in PLACEHOLDERS:
                    out.append(problem(MCP, path, _undeclared(f"${{{ref}}}", secrets)))
    return out


def check_harness(harness: Harness, secrets: Secrets, files: Mapping[str, bytes]) -> list[str]:
    """Named secrets must be declared; script and cassette files must be in the bundle."""
    out: list[str] = []
    if harness.api_key_secret and harness.api_key_secret not in secrets.secrets:
        out.append(problem(HARNESS, "apiKeySecret", _undeclared(harness.api_key_secret, secrets)))
    for i, fb in enumerate(harness.fallback_providers):
        if fb.api_key_secret and fb.api_key_secret not in secrets.secrets:
            out.append(
                problem(
                    HARNESS,
                    f"fallbackProviders[{i}].apiKeySecret",
                    _undeclared(fb.api_key_secret, secrets),
                )
            )
    if harness.fake is not None and isinstance(harness.fake.script, str):
        out += check_bundle_path(HARNESS, "fake.script", harness.fake.script, files)
    if harness.cassette is not None:
        out += check_bundle_path(HARNESS, "cassette", harness.cassette, files)
    return out


def bundle_path(text: str) -> str | None:
    """The normalised bundle-relative path, or None if it is absolute or leaves the bundle."""
    if text.startswith("/") or "\\" in text or re.match(r"^[A-Za-z]:", text):
        return None
    norm = posixpath.normpath(text)
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def check_bundle_path(file: str, field: str, text: str, files: Mapping[str, bytes]) -> list[str]:
    norm = bundle_path(text)
    if norm is None:
        return [problem(file, field, f'"{text}" must be a relative path inside the bundle')]
    if norm not in files:
        return [problem(file, field, f'"{text}" does not exist in the bundle')]
    return []


def check_config_secrets(config: Config, secrets: Secrets) -> list[str]:
    out: list[str] = []
    for i, trigger in enumerate(config.triggers):
        auth = getattr(trigger, "auth", None)
        secret = getattr(auth, "secret", None)
        if secret and secret not in secrets.secrets:
            out.append(problem(CONFIG, f"triggers[{i}].auth.secret", _undeclared(secret, secrets)))
    return out


def check_delegates(config: Config) -> list[str]:
    """A delegate with a ``url`` is an A2A agent (http or https); ``via: "a2a"`` without one is an
    agen deployment of this Hub that call_agent reaches through its Gateway (resolved by name)."""
    out: list[str] = []
    for i, d in enumerate(config.delegates):
        if d.url is not None and not re.match(r"https?://[^/\s]+", d.url):
            out.append(
                problem(
                    CONFIG,
                    f"delegates[{i}].url",
                    f"{d.url!r} is not an http(s) URL of an A2A agent",
                )
            )
        for name, value in (("namespace", d.namespace), ("overrides", d.overrides)):
            if d.url is not None and value is not None:
                out.append(
                    problem(
                        CONFIG,
                        f"delegates[{i}].{name}",
                        f"a delegate with a url is an A2A agent reached at that url; {name} "
                        "applies only to a deployment of this Hub: remove it",
                    )
                )
    return out


def check_preload_skills(front: AgentFrontMatter, skills: Mapping[str, object]) -> list[str]:
    have = ", ".join(sorted(skills)) or "none"
    return [
        problem(AGENT, f"preloadSkills[{i}]", f'no skill "{name}" under skills/ (have: {have})')
        for i, name in enumerate(front.preload_skills)
        if name not in skills
    ]


def warnings_for(harness: Harness | None, config: Config | None, secrets: Secrets) -> list[str]:
    """Things that are allowed but probably not what the author meant."""
    out: list[str] = []
    if harness is not None and harness.api_key_secret is None:
        default = DEFAULT_KEY_SECRET.get(harness.provider)
        if default and default not in secrets.secrets:
            out.append(
                problem(
                    HARNESS,
                    "apiKeySecret",
                    f"provider {harness.provider} reads its key from secret {default}, which is not "
                    f"declared in {SECRETS}; declare it so the Nest knows to supply it",
                )
            )
    if config is not None:
        perms = config.permissions
        if perms.default == "allow" and not perms.deny and not perms.ask:
            out.append(
                problem(
                    CONFIG,
                    "permissions.default",
                    "allow with no deny or ask rules lets the agent call every tool unchecked",
                )
            )
        if config.kind == "task" and config.scale.min > 0:
            out.append(
                problem(
                    CONFIG,
                    "scale.min",
                    f"kind task starts an instance per task, so scale.min {config.scale.min} keeps idle instances running",
                )
            )
    return out


BUILTIN_TOOLS = (
    "finish",
    "report_progress",
    "save_artifact",
    "read_artifact",
    "load_skill",
    "memory_update",
)
"""Tools the runner adds itself (agen.runner.tools.builtin, agen.runner.memory); a test keeps this in step."""
DELEGATION_TOOLS = ("call_agent", "start_agent", "query_agent", "signal_agent")
"""Tools a bundle with ``delegates`` gets (agen.runner.tools.delegate)."""
LOCK_TOOLS = ("acquire_lock", "release_lock")
"""Tools every run on a Hub gets (agen.runner.tools.delegate)."""
FETCH = "fetch"
"""The built-in fetch tool (builtinTools.fetch; agen.runner.tools.fetch)."""

_GLOB_CHARS = re.compile(r"[*?\[]")


BUILTIN_SERVER_TOOLS: dict[str, tuple[str, ...]] = {
    "workspace": ("read", "write", "edit", "glob", "grep", "run"),
    "sql": ("query", "tables"),
}
"""Tools of the MCP servers agen ships (``"command": "agen", "args": ["mcp", NAME, ...]``): known without
starting them (agen.mcpservers; a test keeps this in step)."""

LEFT_OUT_BY: dict[str, dict[str, str]] = {"workspace": {"--no-run": "run"}}
"""Flags of those servers that leave a tool out (`agen mcp workspace --no-run` serves no run)."""


def builtin_server_tools(args: list[str]) -> tuple[str, ...] | None:
    """The tools ``agen mcp NAME ARGS...`` serves, or None when it is not one of agen's servers."""
    if len(args) < 2 or args[0] != "mcp" or args[1] not in BUILTIN_SERVER_TOOLS:
        return None
    left_out = {tool for flag, tool in LEFT_OUT_BY.get(args[1], {}).items() if flag in args[2:]}
    return tuple(t for t in BUILTIN_SERVER_TOOLS[args[1]] if t not in left_out)


WORKSPACE = "workspace"
"""The name the built-in workspace tools go by (rules ``workspace.read``, the model's ``workspace_read``)."""


def workspace_server(mcp: McpConfig) -> str | None:
    """The mcp.json server that makes the built-in workspace tools default to off: one named
    ``workspace`` (whatever it runs, its tools would take the same names) or one running
    ``agen mcp workspace`` under any name."""
    for name, server in mcp.mcp_servers.items():
        args = list(getattr(server, "args", []))
        if name == WORKSPACE or (
            getattr(server, "command", None) == "agen" and args[:2] == ["mcp", WORKSPACE]
        ):
            return name
    return None


def workspace_builtins(config: Config, mcp: McpConfig) -> tuple[str, ...]:
    """The built-in workspace tools a bundle gets (empty when off): ``builtinTools.workspace``
    true or an object turns them on, false off; unset, they are on unless ``workspace_server``."""
    setting = config.builtin_tools.workspace
    if setting is False or (setting is None and workspace_server(mcp) is not None):
        return ()
    run = True if setting is None or isinstance(setting, bool) else setting.run
    return tuple(t for t in BUILTIN_SERVER_TOOLS[WORKSPACE] if run or t != "run")


def check_workspace_builtins(config: Config, mcp: McpConfig) -> list[str]:
    """Built-in workspace tools asked for beside a server named workspace: two sources of one name."""
    setting = config.builtin_tools.workspace
    if setting is None or setting is False or WORKSPACE not in mcp.mcp_servers:
        return []
    return [
        problem(
            CONFIG,
            "builtinTools.workspace",
            f'the built-in workspace tools and the mcp.json server "{WORKSPACE}" would both be '
            f"named {WORKSPACE}_*; set builtinTools.workspace to false to use the server, or "
            "rename the server",
        )
    ]


def _server_names(name: str, server: object) -> tuple[list[str], list[str], list[str]]:
    """(exact tool names, name prefixes, names to suggest) a rule may match for one declared server."""
    args = getattr(server, "args", [])
    if getattr(server, "command", None) == "agen":
        tools = builtin_server_tools(list(args))
        if tools is not None:
            full = [f"{name}.{t}" for t in tools]
            return [*full, *(f"{name}_{t}" for t in tools)], [], full
    return [], [f"{name}.", f"{name}_"], [f"{name}.*"]


def _may_match(glob: str, exact: list[str], prefixes: list[str]) -> bool:
    """Whether ``glob`` could name some tool: it matches a known name, or its literal start agrees with
    a server whose tools are only known once it starts."""
    if any(fnmatch.fnmatchcase(name, glob) for name in exact):
        return True
    literal = glob[: m.start()] if (m := _GLOB_CHARS.search(glob)) else glob
    if not literal:  # "*", "*.*": deliberately broad, a guard for tools added later
        return True
    return any(p.startswith(literal) or literal.startswith(p) for p in prefixes)


def permission_warnings(config: Config, mcp: McpConfig) -> list[str]:
    """A rule that can match no tool of the bundle is a typo until proven otherwise: name the closest tool."""
    servers = sorted(mcp.mcp_servers)
    runner = [*BUILTIN_TOOLS, *(DELEGATION_TOOLS if config.delegates else ()), *LOCK_TOOLS]
    if config.builtin_tools.fetch is not None:
        runner.append(FETCH)
    exact, prefixes, known = list(runner), [], list(runner)
    builtins = workspace_builtins(config, mcp)
    for t in builtins:
        exact += [f"{WORKSPACE}.{t}", f"{WORKSPACE}_{t}"]
        known.append(f"{WORKSPACE}.{t}")
    for s in servers:
        names, starts, suggest = _server_names(s, mcp.mcp_servers[s])
        exact += names
        prefixes += starts
        known += suggest
    out: list[str] = []
    perms = config.permissions
    for section, rules in (("deny", perms.deny), ("ask", perms.ask), ("allow", perms.allow)):
        for i, rule in enumerate(rules):
            glob = rule if isinstance(rule, str) else rule.tool
            path = f"permissions.{section}[{i}]" + ("" if isinstance(rule, str) else ".tool")
            if _may_match(glob, exact, prefixes):
                continue
            server = glob.split(".", 1)[0] if "." in glob else None
            if server == WORKSPACE and builtins:
                why = "the built-in workspace tools (builtinTools.workspace) have no such tool"
            elif server in mcp.mcp_servers:
                why = f'server "{server}" is agen\'s own and has no such tool'
            elif server and not _GLOB_CHARS.search(server):
                why = f'no MCP server "{server}" in {MCP}'
            else:
                why = "it matches no built-in tool or server of this bundle"
            close = difflib.get_close_matches(glob, known, n=1, cutoff=0.4)
            hint = (
                f"; did you mean {close[0]}?"
                if close
                else f" (servers: {', '.join(servers) or 'none'})"
            )
            out.append(problem(CONFIG, path, f'rule "{glob}" matches no tool: {why}{hint}'))
    return out
