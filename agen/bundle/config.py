"""x-agen/config.json: how a deployment runs (kind, scale, limits, permissions, triggers, ...)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Tag, model_validator

from agen.bundle._base import AgenModel, Duration, FieldProblem, HttpUrl, shaped
from agen.bundle.permissions import Permissions
from agen.bundle.sandbox import HostPattern
from agen.bundle.triggers import Trigger
from agen.util.duration import parse_duration_ms

Kind = Literal["singleton", "pool", "task"]


class Scale(AgenModel):
    """Instance counts; ``idleTimeout`` unset means 5m (0s for kind task)."""

    min: int = Field(0, ge=0, description="instances kept running even when idle")
    max: int = Field(1, ge=0, description="most instances at once (1 for kind singleton)")
    target_queue_per_instance: int = Field(
        1, ge=1, description="queued tasks per instance before another instance starts"
    )
    idle_timeout: Duration | None = Field(
        None, description="how long an idle instance above min is kept (a duration)"
    )
    max_concurrency: int = Field(4, ge=1, description="tasks one instance runs at once")
    reserve: int = Field(0, ge=0, description="instances kept free above the load, for bursts")

    @model_validator(mode="after")
    def _max_at_least_min(self) -> Scale:
        if self.max < self.min:
            raise FieldProblem("max", f"must be ≥ scale.min (got {self.max} < {self.min})")
        return self


class Placement(AgenModel):
    labels: dict[str, str] = Field(
        {}, description="labels a Nest must carry (agen node --label) to run this deployment"
    )


def _check_label_budgets(value: dict[str, float]) -> dict[str, float]:
    for key, usd in value.items():
        label, eq, val = key.partition("=")
        if not eq or not label or not val:
            raise FieldProblem(key, 'keys are "label=value", e.g. "team=research"')
        if usd <= 0:
            raise FieldProblem(key, f"must be > 0 (got {usd})")
    return value


class Budget(AgenModel):
    max_usd_per_day: float | None = Field(
        default=None,
        gt=0,
        description="USD the deployment may spend per UTC day (as providers report cost); once spent, new runs wait for the next day",
    )
    label_usd_per_day: Annotated[dict[str, float], AfterValidator(_check_label_budgets)] | None = (
        Field(
            None,
            description='USD per UTC day for tasks carrying a label, keyed "label=value", e.g. {"team=research": 5}',
        )
    )
    cached_input_weight: float = Field(
        0.1,
        ge=0,
        le=1,
        description="how much a cached input token counts against token budgets (0.1: a tenth of a fresh one)",
    )


DEFAULT_INLINE_WAIT_MS = 20_000
DEFAULT_MAX_DELEGATION_DEPTH = 5
DEFAULT_MAX_FAN_OUT = 50
DEFAULT_MAX_TOTAL_DELEGATIONS = 200


class Limits(AgenModel):
    """Per-run limits, and delegation's: maxDelegationDepth is checked by the Hub when a child is
    submitted (the child's depth, root = 0), maxFanOut counts the children one run started, and
    maxTotalDelegations the delegations of a whole tree (counted once per call, so a retry or a
    resume never counts twice). A refusal is a tool error the model reads. A task tree's budget
    is its root task's overrides.budget (maxTokensPerRun / maxUsdPerRun): each child reserves its
    share of what is left when it is submitted (the children one turn starts split it; what a
    running child reserved and has not used yet is not left for others), and every run of the
    tree ends with a report (reason tree_budget) once the tree has spent it. Time a run spends suspended on its children (as on an approval)
    does not count towards maxRunDuration."""

    max_turns: int = Field(
        50,
        ge=1,
        description="model calls one run may make; then it writes a final report and ends partial",
    )
    max_run_duration: Duration = Field("30m", description="how long one run may take (a duration)")
    max_tokens_per_run: int | None = Field(
        default=None, ge=1, description="input plus output tokens one run may use"
    )
    max_usd_per_run: float | None = Field(
        default=None, gt=0, description="USD one run may spend (as the provider reports it)"
    )
    report_tokens: int = Field(
        1024,
        ge=1,
        description="output tokens for the final report a run writes when it reaches a limit",
    )
    stuck_repeats: int = Field(
        3,
        ge=0,
        description="the same step repeated this many times without progress ends the run as stuck (0: never)",
    )
    # Delegation (call_agent / start_agent, agen.runner.tools.delegate); unset: the defaults below.
    inline_wait: Duration | None = Field(
        default=None,
        description="how long call_agent waits for its child in place before the run suspends (default 20s)",
    )
    max_delegation_depth: int | None = Field(
        default=None,
        ge=0,
        description="deepest child this agent may start, counted from the tree's root (default 5)",
    )
    max_fan_out: int | None = Field(
        default=None, ge=1, description="children one run may start (default 50)"
    )
    max_total_delegations: int | None = Field(
        default=None,
        ge=0,
        description="delegations a whole tree (root run) may make, counted once per call (default 200)",
    )

    @property
    def max_run_duration_ms(self) -> int:
        return parse_duration_ms(self.max_run_duration)

    @property
    def inline_wait_ms(self) -> int:
        return parse_duration_ms(self.inline_wait) if self.inline_wait else DEFAULT_INLINE_WAIT_MS


class Workspace(AgenModel):
    mode: Literal["per_task", "per_conversation", "shared"] = Field(
        "per_task",
        description="per_task: a fresh folder per task; per_conversation: one per conversation key; shared: one for the deployment",
    )
    retain: bool | None = Field(
        None, description="keep a per_task folder after its task ends (default: removed)"
    )


class MemoryBlock(AgenModel):
    """A named memory block the agent reads or writes."""

    block: str = Field(
        min_length=1, description="the memory block's id (its label, as `agen memory ls` lists it)"
    )
    mode: Literal["read", "append", "write"] = Field(
        "read",
        description="read: in the context; append: the agent may add to it; write: the agent may replace it",
    )


class MemoryUrl(AgenModel):
    """A document fetched into the context at the start of a run."""

    url: HttpUrl = Field(
        description="an http(s) URL whose text is put in the context at the start of each run"
    )
    max_chars: int | None = Field(
        default=None, ge=1, description="keep at most this many characters of it"
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="how long the fetch may take"
    )


def _memory_shape(value: Any) -> str | None:
    if isinstance(value, MemoryBlock | MemoryUrl):  # serialising a parsed model
        return "block" if isinstance(value, MemoryBlock) else "url"
    if isinstance(value, dict):
        return "block" if "block" in value else "url" if "url" in value else None
    return None


Memory = Annotated[
    Annotated[MemoryBlock, Tag("~block")] | Annotated[MemoryUrl, Tag("~url")],
    shaped(_memory_shape, ("block", "url"), '{"block": name, "mode"} or {"url": ...}'),
]


class ToolHints(AgenModel):
    idempotent: bool | None = Field(
        None,
        description="running it twice with the same arguments does no harm: a call interrupted by a crash may simply run again",
    )
    untrusted_output: bool | None = Field(
        None,
        description="its results come from outside (web pages, email): once the run reads one, its trust drops to untrusted",
    )
    side_effect: bool | None = Field(
        None,
        description="it changes something outside the run: each call is recorded before and after, and a call interrupted by a crash is not repeated (effect unknown)",
    )


class Delegate(AgenModel):
    """Another deployment (same namespace) this agent may hand work to. Declaring delegates gives
    the agent call_agent (a child task whose outcome comes back as the tool result; after
    limits.inlineWait the run suspends, holding no slot, until the child ends), start_agent (a
    joined child by default: its result arrives as a message and finish waits for it; detach: true
    replies later into this conversation), query_agent and signal_agent (descendants only). A
    delegate that is not deployed is a warning at deploy and a tool error at run time. A delegate
    with a ``url`` is an A2A agent (agen or not): call_agent sends it one message over A2A and
    waits for the answer in place (docs/a2a.md "Calling A2A agents"); ``via: "a2a"`` without a
    url is a deployment of this Hub that call_agent calls the same way, through its Gateway: the
    Hub resolves the name to the Gateway's URL and a call token for it. These tools, and
    acquire_lock and release_lock, obey permissions and a task's tool list like any tool (the
    default is ask): allow them (``"allow": ["call_agent", "start_agent"]``) to delegate without
    asking, or ask before delegating."""

    name: str = Field(min_length=1, description="the deployment's name")
    namespace: str | None = Field(
        default=None, description="its namespace (default: the caller's; delegation stays in it)"
    )
    url: str | None = Field(
        default=None,
        description="an A2A agent's base URL (its card is at <url>/.well-known/agent-card.json): "
        "call_agent calls it synchronously over A2A",
    )
    description: str | None = Field(
        default=None, description="what it is good for: shown to the model in the tool description"
    )
    via: Literal["a2a"] | None = Field(
        default=None,
        description='"a2a": call_agent calls it over A2A (without a url: this Hub\'s deployment of '
        "that name, through its Gateway) instead of through a child task",
    )
    overrides: bool | None = Field(
        default=None, description="true: start_agent may set task overrides on this delegate"
    )


class Conversations(AgenModel):
    """What a new submission to a busy conversation does (tasks with the same conversation key; a
    singleton has one conversation). `agen run --delivery MODE` (SubmitTask `delivery`) overrides it for
    one submission. Without a conversation key, or with nothing running (steer, interrupt) or queued
    (collect) in the conversation, every mode queues the submission like followup. collect and steer
    answer with the task the input went into (`created: false`); resubmitting with the same
    idempotency key returns that task again without adding the input twice."""

    queue_mode: Literal["followup", "collect", "steer", "interrupt"] = Field(
        "followup",
        description="followup: queued, runs after the conversation's earlier tasks; collect: merged into the "
        "conversation's queued task; steer: handed to its running task as new input before the next model "
        "call; interrupt: the running task gets one last turn to wrap up (stopped after 20 s at most) and ends "
        "cancelled, and this one runs next",
    )


class Admission(AgenModel):
    rate_per_minute: int | None = Field(
        default=None,
        ge=1,
        description="tasks that may be submitted per minute (token bucket); more are refused with 429",
    )
    burst: int | None = Field(
        default=None,
        ge=1,
        description="how many may be submitted at once before the rate applies (default: ratePerMinute)",
    )
    max_queued_tasks: int | None = Field(
        default=None, ge=0, description="refuse new tasks while this many are queued"
    )


class Rollover(AgenModel):
    """Fold what trimming drops from a long conversation into a running summary (docs/concepts.md
    "Rollover"): one extra model call when earlier messages no longer fit ``contextTokens``."""

    prompt: str | None = Field(
        None,
        min_length=1,
        description="instructions for the summarising call (default: agen's, which keeps goals, "
        "decisions, facts and open items)",
    )
    model: str | None = Field(
        None,
        min_length=1,
        description="the model that summarises, on the harness's provider (default: the harness's model)",
    )


class Review(AgenModel):
    """An outcome rubric and a reviewer that grades each finished result against it (docs/concepts.md
    "Review"). Not satisfied: the executor revises in the same run, at most maxIterations times."""

    rubric: str = Field(
        min_length=1, description="what a satisfying result must meet, shown to the reviewer"
    )
    description: str | None = Field(
        default=None, description="the outcome in a sentence, shown to the reviewer"
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description="the reviewer's model on the harness's provider; unset: the harness model",
    )
    max_iterations: int = Field(
        2, ge=0, le=20, description="how many times the executor may be sent back to revise"
    )
    max_tokens: int = Field(1024, ge=1, description="output tokens per review call")
    max_usd: float | None = Field(
        default=None,
        gt=0,
        description="USD the reviews of one run may cost (as the "
        "provider reports it); once spent, the result ends unreviewed as partial",
    )


class WorkspaceBuiltins(AgenModel):
    """The built-in workspace tools, on, with some left out."""

    run: bool = Field(
        True,
        description="offer run (a shell command in the workspace); false leaves it out and keeps "
        "read, write, edit, glob and grep",
    )


class FetchBuiltin(AgenModel):
    """The built-in ``fetch`` tool: GET a URL of an allowed host, its text back (HTML as text)."""

    allow: list[HostPattern] = Field(
        description="the hosts it may fetch from: names (exact) or *.domain patterns, e.g. "
        '["docs.python.org", "*.wikipedia.org"]; redirects are followed only to these'
    )
    max_bytes: int = Field(
        1_000_000,
        ge=1024,
        le=20_000_000,
        description="bytes read of a response at most (the rest is cut)",
    )
    timeout: Duration = Field("30s", description="how long one fetch may take, redirects included")

    @property
    def timeout_ms(self) -> int:
        return parse_duration_ms(self.timeout)


class BuiltinTools(AgenModel):
    """Tools agen serves in process, with no server to start. ``workspace``: read (line ranges),
    write, edit (exact-string replace: refused when old_string is missing, or found more than once
    without replace_all), glob, grep (regex, include glob, at most 500 matches then "… N more") and
    run (``sh -c`` in the folder, a timeout of 2 minutes by default and 10 at most, output capped
    at 30,000 characters, the exit code; at the timeout the command and every process it started
    are killed; in the sandbox nothing it starts outlives the command). They work on the run's
    workspace folder (``workspace``; created for every run that has them) and are the same code as
    ``agen mcp workspace``. The model sees ``workspace_read``; permission rules name
    ``workspace.read`` (or ``workspace.*``). read, glob and grep are read-only; write, edit and run
    go through the effect ledger (a resumed run does not repeat one that completed); run's output
    counts as untrusted; ``tools.workspace.<tool>`` hints change that as for a server. File paths
    are confined to the folder; run runs in the OS sandbox (harness.json ``sandbox``: the folder
    its only writable path, no network but the allowed hosts; docs/security.md).

    ``toolCatalogue``: tools that load on demand. Past this many MCP tools a run may call, each
    model call carries the other tools and two of agen's: ``list_mcp_server_tools`` (its
    description names every server with the server's own one-line description and tool count;
    called with a server, it lists that server's tools as ``name: description`` lines) and
    ``activate_tool`` (loads one tool: its schema is sent from the next model call on). An
    activated tool is called under the same permission rules, approvals, effect ledger and
    redaction as ever; a tool a rule denies is not in the catalogue. Activations are read back from
    the conversation's recorded activate_tool calls, so a resumed run, and the conversation's next
    run, send the same schemas."""

    workspace: bool | WorkspaceBuiltins | None = Field(
        None,
        description="the built-in workspace tools. null: on, unless mcp.json configures a "
        "workspace server: one named workspace (whatever it runs) or one whose command is agen "
        'with args starting ["mcp", "workspace"]; true: on (an error beside a server named '
        'workspace); false: off; {"run": false}: on without run',
    )
    tool_catalogue: int | None = Field(
        40,
        ge=0,
        description="past this many MCP tools (those the run may call, after permission rules), the "
        "model is sent server names and one-line descriptions instead of every tool's schema, with "
        "list_mcp_server_tools (a server's tools) and activate_tool (loads one: its schema is sent "
        "from the next turn on, and a resumed run still has it). 0: always; null: never, every "
        "schema is sent",
    )
    fetch: FetchBuiltin | None = Field(
        None,
        description="the fetch tool (URL → text, size and time bounded), off unless set; only the "
        "hosts in allow, checked as the sandbox's network.allow is",
    )


class EvalBar(AgenModel):
    """The bar ``agen deploy --require-eval`` holds a bundle to: the share of its scenarios that pass
    every run (pass^k). Default 1.0: every scenario passes."""

    min_pass_rate: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="the share of scenarios that must pass every run (0.0 to 1.0)",
    )


class Config(AgenModel):
    """x-agen/config.json; every section is optional."""

    kind: Kind = Field(
        "pool",
        description="pool: instances share a queue; singleton: at most one instance; task: an instance per task, stopped after it",
    )
    scale: Scale = Field(Scale(), description="how many instances run")
    placement: Placement = Field(
        Placement(), description="which Nests may run the instances: labels a Nest must have"
    )
    budget: Budget = Field(
        Budget(), description="spend limits per day (USD, as providers report it)"
    )
    limits: Limits = Field(Limits(), description="per-run limits: turns, duration, tokens, USD")
    permissions: Permissions = Field(
        Permissions(),
        description="which tool calls are denied, asked (need an approval) or allowed",
    )
    triggers: list[Trigger] = Field(
        [],
        description="what submits tasks without anyone running `agen run`: cron, random, webhook and event triggers",
    )
    workspace: Workspace = Field(
        Workspace(),
        description="the working folder the workspace tools see: per task, per conversation or shared",
    )
    memory: list[Memory] = Field(
        [],
        description="memory blocks the agent reads or writes, and documents fetched into its context",
    )
    tools: dict[str, dict[str, ToolHints]] = Field(
        {},
        description='hints per MCP server and tool: {"server": {"tool": {"idempotent": true, "sideEffect": false, "untrustedOutput": true}}}',
    )
    delegates: list[Delegate] = Field(
        default=[],
        description="the deployments this agent may delegate to (call_agent, start_agent)",
    )
    conversations: Conversations = Field(
        Conversations(), description="what a new message of a busy conversation does"
    )
    admission: Admission = Field(
        Admission(), description="how fast tasks may be submitted, and how many may queue"
    )
    record_interactions: bool = Field(
        False,
        description="record every model call as a replay cassette (`agen replay`, provider replay)",
    )
    rollover: Rollover | None = Field(
        default=None,
        description="summarise what trimming drops from a long conversation instead of losing it "
        "(off when absent: history is trimmed oldest-first)",
    )
    builtin_tools: BuiltinTools = Field(
        BuiltinTools(),
        description="built-in tools to turn on or off: the workspace toolset, the MCP tool catalogue",
    )
    review: Review | None = Field(
        None,
        description="a reviewer that grades each result against a rubric and sends it back to revise",
    )
    eval: EvalBar = Field(
        EvalBar(), description="the bar `agen deploy --require-eval` holds the bundle to"
    )

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        if self.kind == "singleton" and self.scale.max > 1:
            raise FieldProblem(
                "scale.max", f"must be ≤ 1 for kind singleton (got {self.scale.max})"
            )
        seen: set[str] = set()
        for i, trigger in enumerate(self.triggers):
            if trigger.name in seen:
                raise FieldProblem(
                    f"triggers[{i}].name", f'duplicate trigger name "{trigger.name}"'
                )
            seen.add(trigger.name)
        names = [d.name for d in self.delegates]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise FieldProblem(f"delegates[{i}].name", f'duplicate delegate name "{name}"')
        return self

    @property
    def idle_timeout_ms(self) -> int:
        """How long an idle instance is kept: scale.idleTimeout, else 5m (0 for kind task)."""
        if self.scale.idle_timeout is not None:
            return parse_duration_ms(self.scale.idle_timeout)
        return 0 if self.kind == "task" else 300_000
