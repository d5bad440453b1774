"""Deployment RPC shapes: create/update from bundle files, list, scale, pause, delete, logs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agen.wire.common import NAME_PATTERN, Count, DeploymentByName, Model, Replicas, TimeMs


class ScalePolicy(Model):
    min: int = 0
    max: int = 1
    target_queue_per_instance: int = 1
    idle_timeout_ms: int = 300_000
    max_concurrency: int = 4
    reserve: int = 0


class TriggerDue(Model):
    """When a cron or random trigger fires next and which window it settled last (ms UTC)."""

    name: str
    type: str
    next_due_at: int | None = None
    last_due_at: int | None = None


class Deployment(Model):
    id: str
    namespace: str
    name: str
    kind: str
    definition_id: str
    digest: str
    scale: ScalePolicy
    placement: dict[str, Any] = {}
    budget: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    policy: dict[str, Any] = {}
    desired: int = 0
    paused: bool = False
    pause_reason: str | None = None
    ready: int = 0
    instances: int = 0
    queued: int = 0
    scheduled: int = 0
    running: int = 0
    waiting: int = 0
    last_activity_ms: int = 0
    created_ms: int = 0
    updated_ms: int = 0
    # One activity word per deployment (agen.hub.observe.activity), shared by every screen and command.
    activity: str = "idle"
    stopped_reason: str | None = None
    waiting_on: str | None = Field(
        None,
        description="delegate: working only through tasks of it waiting on the child tasks they started",
    )
    failing_reason: str | None = Field(
        None, description="activity failing: the last error of the instances that cannot start"
    )
    needs: str | None = Field(None, description="activity needs: what it needs (approval)")
    failed_1h: int = Field(0, description="tasks that ended failed in the last hour")
    last_failure: str | None = Field(
        None, description="the error of the last task that failed in the last hour"
    )
    last_failure_ms: int | None = Field(None, description="when that task failed")
    pending_approvals: int = 0
    spent_today_usd: float = 0.0
    triggers: list[TriggerDue] = []  # cron and random triggers only (the others have no schedule)


class CreateDeploymentRequest(Model):
    """A bundle as a files map (path -> base64 bytes); ``name`` defaults to the bundle's name."""

    namespace: str = Field("default", pattern=NAME_PATTERN)
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    files: dict[str, str] = Field(
        min_length=1,
        description="the bundle's files, path -> base64 bytes (plugin.json, x-agen/agent.md, "
        "x-agen/harness.json at least)",
    )
    replicas: Replicas | None = None
    validate_only: bool = False


class DeploymentResponse(Model):
    deployment: Deployment | None = None
    created: bool = False
    changed: bool = False
    warnings: list[str] = []


class GetDeploymentRequest(DeploymentByName):
    pass


class ListDeploymentsRequest(Model):
    namespace: str = Field("default", pattern=NAME_PATTERN)
    all_namespaces: bool = False


class ListDeploymentsResponse(Model):
    deployments: list[Deployment]


class Instance(Model):
    id: str
    nest_id: str
    nest: str = ""
    namespace: str = ""
    deployment: str = ""
    deployment_id: str
    digest: str
    state: str
    in_flight: int = 0
    exit_reason: str | None = None
    started_ms: int
    updated_ms: int


class ListInstancesRequest(Model):
    namespace: str | None = Field(default=None, pattern=NAME_PATTERN)


class ListInstancesResponse(Model):
    instances: list[Instance]


class ScaleDeploymentRequest(DeploymentByName):
    replicas: Replicas


class PauseDeploymentRequest(DeploymentByName):
    """paused=True is ``agen stop``, False ``agen start``; hold_runs also holds unfinished tasks."""

    paused: bool = True
    hold_runs: bool = False
    hold_until_ms: TimeMs | None = None
    reason: str | None = None


class DeleteDeploymentRequest(DeploymentByName):
    pass


class DeleteDeploymentResponse(Model):
    deleted: bool = True
    cancelled_tasks: int = 0
    ended_runs: int = 0


class LogLine(Model):
    seq: int
    namespace: str = "default"
    deployment: str
    instance_id: str | None = None
    level: str
    message: str
    created_ms: int


class GetLogsRequest(DeploymentByName):
    instance: str | None = None
    limit: int = Field(200, ge=1, le=10_000)
    after_seq: Count = 0
    wait_seconds: float = Field(0, ge=0, le=60)


class GetLogsResponse(Model):
    lines: list[LogLine]
    last_seq: int = 0
