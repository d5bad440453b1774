"""Load and validate a bundle, reporting every problem at once.

A bundle is read into a files map (path -> raw bytes): that map is what is digested and stored,
so the Hub can load a stored definition with ``load_bundle_files`` and get the same result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agen.bundle import checks
from agen.bundle.agent import AgentFrontMatter, Secrets
from agen.bundle.config import Config
from agen.bundle.digest import definition_id, digest_files, walk_bundle
from agen.bundle.frontmatter import split_front_matter
from agen.bundle.harness import Harness, Turn
from agen.bundle.problems import json_kind, problem, problems_from
from agen.bundle.refused import refused_problems
from agen.bundle.sandbox import check_sandbox_servers, sandboxed_parts
from agen.bundle.standard import McpConfig, PluginManifest, SkillFrontMatter, StdioServer
from agen.errors import BundleError, InvalidError

PLUGIN, SKILLS = "plugin.json", "skills/"
REQUIRED = (PLUGIN, checks.AGENT, checks.HARNESS)

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Skill:
    """skills/<name>/SKILL.md: ``name`` is the folder name (what preloadSkills and load_skill use)."""

    name: str
    front_matter: SkillFrontMatter
    instructions: str


@dataclass(frozen=True)
class Bundle:
    """A parsed, valid bundle. ``files`` holds the raw bytes that were digested."""

    name: str
    digest: str
    files: Mapping[str, bytes]
    plugin: PluginManifest
    mcp: McpConfig
    agent: AgentFrontMatter
    system_prompt: str
    harness: Harness
    config: Config
    secrets: Secrets
    skills: Mapping[str, Skill]
    warnings: tuple[str, ...] = ()
    root: str | None = None

    @property
    def definition_id(self) -> str:
        return definition_id(self.name, self.digest)

    def sandboxed_parts(self) -> list[str]:
        """What of this bundle runs in the OS sandbox (empty: it needs no bubblewrap)."""
        stdio, _ = _server_names(self.mcp)
        builtins = checks.workspace_builtins(self.config, self.mcp)
        return sandboxed_parts(self.harness.sandbox, builtins, stdio)


@dataclass
class _Reader:
    """Parses one file at a time into models, appending problems instead of stopping."""

    files: Mapping[str, bytes]
    problems: list[str] = field(default_factory=list)

    def text(self, path: str) -> str | None:
        data = self.files.get(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            self.problems.append(problem(path, "", f"not valid UTF-8 (byte {e.start})"))
            return None

    def json(self, path: str) -> Any:
        text = self.text(path)
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            self.problems.append(
                problem(path, "", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}")
            )
            return None

    def model(self, path: str, cls: type[M], data: Any) -> M | None:
        if data is None:
            return None
        if not isinstance(data, dict):
            self.problems.append(problem(path, "", f"must be an object (got {json_kind(data)})"))
            return None
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            self.problems.extend(problems_from(path, e))
            return None

    def json_model(self, path: str, cls: type[M], default: M | None = None) -> M | None:
        if path not in self.files:
            if default is None:
                self.problems.append(
                    problem(path, "", "missing; every bundle needs one (see agen init)")
                )
            return default
        data = self.json(path)
        self.problems.extend(refused_problems(path, data))
        return self.model(path, cls, data)

    def markdown(self, path: str) -> tuple[dict[str, Any], str] | None:
        text = self.text(path)
        if text is None:
            return None
        try:
            return split_front_matter(text)
        except ValueError as e:
            self.problems.append(problem(path, "front matter", str(e)))
            return None


def load_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Read a bundle folder; BundleError lists every problem found. A folder the OS will not open (a name
    too long, no permission) is an InvalidError naming it, never a raw OSError."""
    try:
        files = walk_bundle(path)
    except OSError as e:
        shown = os.fspath(path)
        shown = shown if len(shown) <= 200 else shown[:100] + "…" + shown[-60:]
        raise InvalidError(
            f"cannot read the bundle folder {shown}: {e.strerror or e}", path=shown
        ) from None
    return load_bundle_files(files, root=os.fspath(path))


def _server_names(mcp: McpConfig) -> tuple[list[str], list[str]]:
    """(stdio server names, HTTP server names) of mcp.json."""
    stdio = [n for n, s in mcp.mcp_servers.items() if isinstance(s, StdioServer)]
    return stdio, [n for n in mcp.mcp_servers if n not in stdio]


def validate_bundle(path: str | os.PathLike[str]) -> tuple[Bundle | None, list[str], list[str]]:
    """(bundle or None, problems, warnings): the non-raising form, for ``agen deploy --validate``."""
    try:
        bundle = load_bundle(path)
    except BundleError as e:
        return None, list(e.problems), list(e.details.get("warnings", []))
    return bundle, [], list(bundle.warnings)


def load_bundle_files(files: Mapping[str, bytes], root: str | None = None) -> Bundle:
    """Parse a bundle from its files map (as stored by the Hub, or read by ``walk_bundle``)."""
    r = _Reader(files)
    plugin = r.json_model(PLUGIN, PluginManifest)
    mcp = r.json_model(checks.MCP, McpConfig, McpConfig())
    harness = r.json_model(checks.HARNESS, Harness)
    config = r.json_model(checks.CONFIG, Config, Config())
    secrets = r.json_model(checks.SECRETS, Secrets, Secrets())
    agent, prompt = _agent(r)
    skills = _skills(r)
    warnings: list[str] = [w for s in skills.values() for w in _skill_warnings(s)]

    if secrets is not None:
        if mcp is not None:
            r.problems += checks.check_mcp_secrets(mcp, secrets)
        if harness is not None:
            r.problems += checks.check_harness(harness, secrets, files)
        if config is not None:
            r.problems += checks.check_config_secrets(config, secrets)
        warnings += checks.warnings_for(harness, config, secrets)
    if harness is not None and mcp is not None:
        r.problems += check_sandbox_servers(harness.sandbox, *_server_names(mcp))
    if harness is not None and not harness.sandbox.enabled:
        warnings.append(
            problem(
                checks.HARNESS,
                "sandbox.enabled",
                "false runs the workspace run tool and stdio MCP servers unconfined, with your "
                "user's files, network and environment",
            )
        )
    if config is not None:
        r.problems += checks.check_delegates(config)
    if config is not None and mcp is not None:
        r.problems += checks.check_workspace_builtins(config, mcp)
        warnings += checks.permission_warnings(config, mcp)
    if harness is not None and harness.fake is not None and isinstance(harness.fake.script, str):
        _script_file(r, harness.fake.script)
    if agent is not None:
        r.problems += checks.check_preload_skills(agent, skills)

    if r.problems or None in (plugin, mcp, harness, config, secrets, agent) or prompt is None:
        where = f"bundle {root}" if root else "bundle"
        count = len(r.problems)
        raise BundleError(
            f"{where} is invalid ({count} problem{'s' if count != 1 else ''})",
            r.problems,
            warnings=warnings,
        )
    assert plugin and mcp and harness and config and secrets and agent
    return Bundle(
        name=plugin.name,
        digest=digest_files(files),
        files=MappingProxyType(dict(files)),
        plugin=plugin,
        mcp=mcp,
        agent=agent,
        system_prompt=prompt,
        harness=harness,
        config=config,
        secrets=secrets,
        skills=MappingProxyType(skills),
        warnings=tuple(warnings),
        root=root,
    )


def _agent(r: _Reader) -> tuple[AgentFrontMatter | None, str | None]:
    if checks.AGENT not in r.files:
        r.problems.append(
            problem(checks.AGENT, "", "missing; every bundle needs one (see agen init)")
        )
        return None, None
    parsed = r.markdown(checks.AGENT)
    if parsed is None:
        return None, None
    front, body = parsed
    agent = r.model(checks.AGENT, AgentFrontMatter, front)
    if not body.strip():
        r.problems.append(problem(checks.AGENT, "body", "the system prompt is empty"))
        return agent, None
    return agent, body.strip()


def _skills(r: _Reader) -> dict[str, Skill]:
    folders = sorted(
        {
            p[len(SKILLS) :].split("/")[0]
            for p in r.files
            if p.startswith(SKILLS) and p.count("/") >= 2
        }
    )
    skills: dict[str, Skill] = {}
    for folder in folders:
        path = f"{SKILLS}{folder}/SKILL.md"
        if path not in r.files:
            r.problems.append(
                problem(path, "", "missing; every folder under skills/ needs a SKILL.md")
            )
            continue
        parsed = r.markdown(path)
        if parsed is None:
            continue
        front, body = parsed
        model = r.model(path, SkillFrontMatter, front)
        if model is not None:
            skills[folder] = Skill(name=folder, front_matter=model, instructions=body.strip())
    return skills


def _skill_warnings(skill: Skill) -> list[str]:
    path = f"{SKILLS}{skill.name}/SKILL.md"
    out = []
    if skill.front_matter.name != skill.name:
        out.append(
            problem(
                path,
                "name",
                f'"{skill.front_matter.name}" differs from its folder name "{skill.name}"; '
                "preloadSkills and load_skill use the folder name",
            )
        )
    if not skill.instructions:
        out.append(problem(path, "body", "the skill has no instructions"))
    return out


def _script_file(r: _Reader, script: str) -> None:
    """A fake script kept in its own file must be a list of turns."""
    path = checks.bundle_path(script)
    if path is None or path not in r.files:
        return  # already reported by check_harness
    data = r.json(path)
    if data is None:
        return
    if not isinstance(data, list):
        r.problems.append(
            problem(path, "", f"a fake script must be a list of turns (got {json_kind(data)})")
        )
        return
    for i, turn in enumerate(data):
        try:
            Turn.model_validate(turn)
        except ValidationError as e:
            r.problems.extend(problems_from(path, e, prefix=f"[{i}]"))
