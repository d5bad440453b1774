"""The domain core: the states a task, run, deployment, approval or instance can be in, the typed
rows the Hub, Nest and runner pass each other, and how a run ended (``Outcome``).

Below it are only the Store and the bundle, so every layer (hub, nest, runner) can depend on it
without a cycle. Besides the shapes it holds the rules the Hub and the engine both apply to the same
rows (agen.domain.approvals, memory, redact, prompt, delegation), so the Hub never imports the
engine; wire shapes stay in agen.wire and are converted at the edge.
"""

from agen.domain.outcome import Outcome
from agen.domain.partial import (
    DeploymentBudget,
    DeploymentLimits,
    DeploymentRef,
    DeploymentSizing,
    NewTaskRow,
    RunRef,
    RunUsage,
    TaskBrief,
    TaskLineage,
    TaskOrigin,
    TaskStatus,
    columns,
)
from agen.domain.rows import DeploymentRow, LeasedTaskRow, RunRow, TaskRow
from agen.domain.states import (
    LIVE,
    TERMINAL,
    UNFINISHED,
    ApprovalState,
    DeploymentKind,
    InstanceState,
    NestState,
    OutcomeStatus,
    RunStatus,
    TaskState,
)

__all__ = [
    "LIVE",
    "TERMINAL",
    "UNFINISHED",
    "ApprovalState",
    "DeploymentBudget",
    "DeploymentKind",
    "DeploymentLimits",
    "DeploymentRef",
    "DeploymentRow",
    "DeploymentSizing",
    "InstanceState",
    "LeasedTaskRow",
    "NestState",
    "NewTaskRow",
    "Outcome",
    "OutcomeStatus",
    "RunRef",
    "RunRow",
    "RunStatus",
    "RunUsage",
    "TaskBrief",
    "TaskLineage",
    "TaskOrigin",
    "TaskRow",
    "TaskState",
    "TaskStatus",
    "columns",
]
