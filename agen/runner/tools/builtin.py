"""Built-in tools every agent has: finish, report_progress, save_artifact, read_artifact, load_skill.

finish, save_artifact and read_artifact bypass permissions and a task's tool list (seed 000:
storage mechanics, not actions on the outside world). report_progress and load_skill obey them
like any tool: the seed exempts only those three, so a bundle can deny or ask for these too.
finish validates ``data`` against harness.result.schema and carries the outcome back to
the loop in ``ToolResult.data``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agen.bundle import Skill
from agen.domain import Outcome, OutcomeStatus
from agen.errors import AgenError
from agen.runner import artifacts
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult
from agen.store.base import Store

FINISH = "finish"
STATUSES = ["done", "partial", "needs_input", "rejected", "failed"]

ProgressHook = Callable[[str | None, dict[str, Any]], Awaitable[None]]


class FinishTool(Tool):
    name = FINISH
    description = (
        "End the run with its outcome. Call it once the work is done (or cannot be done): a one-line "
        "summary, optional structured data, and any artifact ids to hand over."
    )
    bypass_permissions = True

    def __init__(self, result_schema: dict[str, Any] | None) -> None:
        self.result_schema = result_schema
        # Set for an agent that delegates: how many joined children of a task still run.
        self.joined: Callable[[str], Awaitable[int]] | None = None
        data_schema: dict[str, Any] = result_schema or {"description": "optional structured result"}
        self.input_schema = {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "one or two sentences: what was done"},
                "status": {"type": "string", "enum": STATUSES, "default": "done"},
                "data": data_schema,
                "artifacts": {"type": "array", "items": {"type": "string"}},
                "reason": {"type": "string"},
            },
            "required": ["summary", "data"] if result_schema else ["summary"],
        }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        outcome = self.outcome(args)
        if self.joined is not None and ctx.task_id and outcome.status == OutcomeStatus.DONE:
            running = await self.joined(ctx.task_id)
            if running:
                raise ToolError(
                    f"{running} child task(s) you started are still running; wait for them "
                    "(their results reach you as messages) or cancel them, then call finish again"
                )
        return ToolResult("accepted: the run ends with this outcome", data={"outcome": outcome})

    def outcome(self, args: dict[str, Any]) -> Outcome:
        """The outcome these arguments give, or ToolError saying what to fix."""
        status = args.get("status") or "done"
        if status not in STATUSES:
            raise ToolError(f"status must be one of {', '.join(STATUSES)} (got {status!r})")
        summary = args.get("summary")
        if not isinstance(summary, str):
            raise ToolError("summary is required: a one-line description of what was done")
        if self.result_schema is not None:
            import jsonschema

            try:
                jsonschema.validate(args.get("data"), self.result_schema)
            except jsonschema.ValidationError as e:
                where = "/".join(str(p) for p in e.absolute_path) or "data"
                raise ToolError(
                    f"data does not match the result schema at {where}: {e.message}; "
                    "call finish again with corrected data"
                ) from None
        arts = args.get("artifacts") or []
        if not isinstance(arts, list) or not all(isinstance(a, str) for a in arts):
            raise ToolError("artifacts must be a list of artifact ids")
        reason = args.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ToolError("reason must be a string: a word or two saying why the run ended so")
        return Outcome(
            status=OutcomeStatus(status),
            reason=reason,
            summary=summary,
            data=args.get("data"),
            artifacts=arts,
        )


class ReportProgressTool(Tool):
    name = "report_progress"
    description = (
        "Tell the people watching this run how far along it is (a short note, optional percent)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "note": {"type": "string"},
            "percent": {"type": "number", "minimum": 0, "maximum": 100},
        },
        "required": ["note"],
    }

    def __init__(self, hook: ProgressHook | None) -> None:
        self.hook = hook

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if self.hook is not None:
            await self.hook(
                ctx.task_id, {"note": str(args.get("note") or ""), "percent": args.get("percent")}
            )
            return ToolResult("progress reported")
        return ToolResult("progress noted (nobody is watching this run live; carry on)")


class SaveArtifactTool(Tool):
    name = "save_artifact"
    description = (
        "Save text (a report, data, a file's content) as a named artifact people can read later. "
        "Returns its id. Saving the same content again returns the same id."
    )
    bypass_permissions = True
    input_schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "content": {"type": "string"},
            "media_type": {"type": "string", "default": "text/plain"},
        },
        "required": ["name", "content"],
    }

    def __init__(self, store: Store) -> None:
        self.store = store

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            art = await artifacts.save_artifact(
                self.store,
                ctx.namespace,
                str(args.get("name") or "artifact"),
                str(args.get("content") or ""),
                str(args.get("media_type") or "text/plain"),
                ctx.task_id,
                ctx.run_id,
            )
        except AgenError as e:
            raise ToolError(e.message) from None
        return ToolResult(f"saved artifact {art.id} ({art.size} bytes)", data={"artifact": art.id})


class ReadArtifactTool(Tool):
    name = "read_artifact"
    description = "Read an artifact by id, a page at a time (offset and length in characters)."
    bypass_permissions = True
    read_only = True
    input_schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "length": {"type": "integer", "minimum": 1},
        },
        "required": ["id"],
    }

    def __init__(self, store: Store, page_chars: int) -> None:
        self.store = store
        self.page_chars = page_chars

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        offset = int(args.get("offset") or 0)
        length = min(int(args.get("length") or self.page_chars), self.page_chars)
        try:
            page, total, nxt = await artifacts.read_artifact(
                self.store, ctx.namespace, str(args.get("id")), offset, length
            )
        except AgenError as e:
            raise ToolError(e.message) from None
        tail = f"\n[characters {offset}-{offset + len(page)} of {total}" + (
            f"; next offset {nxt}]" if nxt >= 0 else "; end of artifact]"
        )
        return ToolResult(page + tail)


class LoadSkillTool(Tool):
    name = "load_skill"
    description = "Load the full instructions of one of the skills listed in your instructions."
    read_only = True

    def __init__(self, skills: Mapping[str, Skill]) -> None:
        self.skills = skills
        self.input_schema = {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(skills)}},
            "required": ["name"],
        }

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = str(args.get("name") or "")
        skill = self.skills.get(name)
        if skill is None:
            raise ToolError(
                f"no skill named {name!r}; available: {', '.join(sorted(self.skills)) or 'none'}"
            )
        return ToolResult(f"# Skill: {name}\n\n{skill.instructions}")


def builtin_tools(
    store: Store,
    *,
    result_schema: dict[str, Any] | None,
    skills: Mapping[str, Skill],
    progress: ProgressHook | None,
    max_tool_result_chars: int,
) -> list[Tool]:
    page = artifacts.DEFAULT_PAGE
    if max_tool_result_chars > 0:
        page = max(200, min(page, max_tool_result_chars - 200))
    tools: list[Tool] = [
        FinishTool(result_schema),
        ReportProgressTool(progress),
        SaveArtifactTool(store),
        ReadArtifactTool(store, page),
    ]
    if skills:
        tools.append(LoadSkillTool(skills))
    return tools
