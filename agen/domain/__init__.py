"""The domain core: the states a task, run, deployment, approval or instance can be in, the typed
rows the Hub, Nest and runner pass each other, and how a run ended (``Outcome``).

It imports nothing from agen but itself, so every layer (hub, nest, runner, store users) can
depend on it without a cycle; wire shapes stay in agen.api.models and are converted at the edge.
"""

from agen.domain.outcome import Outcome
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
    "DeploymentKind",
    "DeploymentRow",
    "InstanceState",
    "LeasedTaskRow",
    "NestState",
    "Outcome",
    "OutcomeStatus",
    "RunRow",
    "RunStatus",
    "TaskRow",
    "TaskState",
]
