"""Every RPC declared once: name, request and response models, required scope, handler.

HTTP routes (``POST /v1/<Name>``), the OpenAPI document and the in-process client are all
generated from ``RPCS``, so the CLI, the TUI and remote callers cannot drift apart. Handlers
are named by import path and resolved on first in-process use, so an HTTP-only client never
imports the Hub.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import BaseModel

if TYPE_CHECKING:
    from agen.wire import agents as ag
    from agen.wire import approvals as ap
    from agen.wire import delegation as dg
    from agen.wire import deployments as dp
    from agen.wire import evals as ev
    from agen.wire import feedback as fb
    from agen.wire import ids
    from agen.wire import memory as mm
    from agen.wire import nests as ns
    from agen.wire import observe as ob
    from agen.wire import secrets as sec
    from agen.wire import signals as sg
    from agen.wire import tasks as tk
    from agen.wire import tokens as tok
    from agen.wire.common import Empty, Ok


Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)
Handler = Callable[[Any, Any, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Rpc(Generic[Req, Resp]):
    """One API method. ``starts_work`` RPCs are refused (503) while the Hub drains; ``every_namespace``
    RPCs act on the whole Hub (stop it, sign every namespace's tokens, add or end a Nest that runs every
    namespace's work), so a token limited to namespaces is refused them whatever its scope."""

    name: str
    request_ref: str  # "<agen.wire module>:<model>", imported on first use
    response_ref: str
    scope: str
    handler_path: str
    doc: str
    starts_work: bool = False
    every_namespace: bool = False
    _resolved: list[Handler] = field(default_factory=list, compare=False, repr=False)
    _models: list[type[BaseModel]] = field(default_factory=list, compare=False, repr=False)

    @property
    def path(self) -> str:
        return f"/v1/{self.name}"

    @property
    def request(self) -> type[Req]:
        return cast("type[Req]", self._model(0))

    @property
    def response(self) -> type[Resp]:
        return cast("type[Resp]", self._model(1))

    def _model(self, i: int) -> type[BaseModel]:
        """The request (0) or response (1) model. Imported on first use, so a command that calls
        one RPC loads only the wire modules it talks in (all of them cost ~40 ms to import)."""
        if not self._models:
            for ref in (self.request_ref, self.response_ref):
                module, _, attr = ref.partition(":")
                self._models.append(getattr(importlib.import_module(f"agen.wire.{module}"), attr))
        return self._models[i]

    def handler(self) -> Handler:
        if not self._resolved:
            module, _, attr = self.handler_path.partition(":")
            self._resolved.append(getattr(importlib.import_module(module), attr))
        return self._resolved[0]


def _rpc(
    name: str,
    req: str,
    resp: str,
    scope: str,
    handler: str,
    doc: str,
    *,
    starts_work: bool = False,
    every_namespace: bool = False,
) -> Rpc[Any, Any]:
    return Rpc(name, req, resp, scope, handler, doc, starts_work, every_namespace)


D, T, A, K = (
    "agen.hub.rpc.deployments",
    "agen.hub.rpc.tasks",
    "agen.hub.rpc.approvals",
    "agen.hub.rpc.tokens",
)

CreateDeployment: Rpc[dp.CreateDeploymentRequest, dp.DeploymentResponse] = _rpc(
    "CreateDeployment",
    "deployments:CreateDeploymentRequest",
    "deployments:DeploymentResponse",
    "operator",
    f"{D}:create_deployment",
    "Create or update a deployment from bundle files.",
    starts_work=True,
)
UpdateDeployment: Rpc[dp.CreateDeploymentRequest, dp.DeploymentResponse] = _rpc(
    "UpdateDeployment",
    "deployments:CreateDeploymentRequest",
    "deployments:DeploymentResponse",
    "operator",
    f"{D}:update_deployment",
    "Update an existing deployment from bundle files.",
    starts_work=True,
)
GetDeployment: Rpc[dp.GetDeploymentRequest, dp.DeploymentResponse] = _rpc(
    "GetDeployment",
    "deployments:GetDeploymentRequest",
    "deployments:DeploymentResponse",
    "viewer",
    f"{D}:get_deployment",
    "One deployment with queue counts and instances.",
)
ListDeployments: Rpc[dp.ListDeploymentsRequest, dp.ListDeploymentsResponse] = _rpc(
    "ListDeployments",
    "deployments:ListDeploymentsRequest",
    "deployments:ListDeploymentsResponse",
    "viewer",
    f"{D}:list_deployments",
    "Deployments of a namespace (or every namespace).",
)
ListInstances: Rpc[dp.ListInstancesRequest, dp.ListInstancesResponse] = _rpc(
    "ListInstances",
    "deployments:ListInstancesRequest",
    "deployments:ListInstancesResponse",
    "viewer",
    "agen.hub.fleet.instances:list_instances",
    "Every live instance on every Nest.",
)
ScaleDeployment: Rpc[dp.ScaleDeploymentRequest, dp.DeploymentResponse] = _rpc(
    "ScaleDeployment",
    "deployments:ScaleDeploymentRequest",
    "deployments:DeploymentResponse",
    "operator",
    f"{D}:scale_deployment",
    "Set desired instances (counts as activity).",
    starts_work=True,
)
PauseDeployment: Rpc[dp.PauseDeploymentRequest, dp.DeploymentResponse] = _rpc(
    "PauseDeployment",
    "deployments:PauseDeploymentRequest",
    "deployments:DeploymentResponse",
    "operator",
    f"{D}:pause_deployment",
    "Stop (hold at zero) or start a deployment.",
)
DeleteDeployment: Rpc[dp.DeleteDeploymentRequest, dp.DeleteDeploymentResponse] = _rpc(
    "DeleteDeployment",
    "deployments:DeleteDeploymentRequest",
    "deployments:DeleteDeploymentResponse",
    "operator",
    f"{D}:delete_deployment",
    "Delete a deployment, cancelling its unfinished tasks.",
)
GetLogs: Rpc[dp.GetLogsRequest, dp.GetLogsResponse] = _rpc(
    "GetLogs",
    "deployments:GetLogsRequest",
    "deployments:GetLogsResponse",
    "viewer",
    f"{D}:get_logs",
    "The deployment's operational log.",
)
SubmitTask: Rpc[tk.SubmitTaskRequest, tk.TaskResponse] = _rpc(
    "SubmitTask",
    "tasks:SubmitTaskRequest",
    "tasks:TaskResponse",
    "operator",
    f"{T}:submit_task",
    "Queue a task for a deployment.",
    starts_work=True,
)
GetTask: Rpc[tk.GetTaskRequest, tk.TaskResponse] = _rpc(
    "GetTask",
    "tasks:GetTaskRequest",
    "tasks:TaskResponse",
    "viewer",
    f"{T}:get_task",
    "A task; wait_seconds waits for its end or for an approval it waits on.",
)
ListTasks: Rpc[tk.ListTasksRequest, tk.ListTasksResponse] = _rpc(
    "ListTasks",
    "tasks:ListTasksRequest",
    "tasks:ListTasksResponse",
    "viewer",
    f"{T}:list_tasks",
    "Recent tasks, or scheduled ones.",
)
CancelTask: Rpc[tk.CancelTaskRequest, tk.TaskResponse] = _rpc(
    "CancelTask",
    "tasks:CancelTaskRequest",
    "tasks:TaskResponse",
    "operator",
    "agen.hub.rpc.trees:cancel_task",
    "Cancel a task (tree: its whole tree); a running one stops, or with mode graceful gets a last turn first.",
)
PauseTask: Rpc[tk.PauseTaskRequest, tk.TaskResponse] = _rpc(
    "PauseTask",
    "tasks:PauseTaskRequest",
    "tasks:TaskResponse",
    "operator",
    "agen.hub.rpc.trees:pause_task",
    "Hold a task (tree: its whole tree) until resumed (or until a time).",
)
ResumeTask: Rpc[tk.ResumeTaskRequest, tk.TaskResponse] = _rpc(
    "ResumeTask",
    "tasks:ResumeTaskRequest",
    "tasks:TaskResponse",
    "operator",
    "agen.hub.rpc.trees:resume_task",
    "End a hold started by PauseTask (tree: on its whole tree).",
    starts_work=True,
)
GetTaskTree: Rpc[tk.GetTaskTreeRequest, tk.GetTaskTreeResponse] = _rpc(
    "GetTaskTree",
    "tasks:GetTaskTreeRequest",
    "tasks:GetTaskTreeResponse",
    "viewer",
    "agen.hub.rpc.trees:get_task_tree",
    "Every task of the tree a task belongs to, with state, duration and cost.",
)
ListApprovals: Rpc[ap.ListApprovalsRequest, ap.ListApprovalsResponse] = _rpc(
    "ListApprovals",
    "approvals:ListApprovalsRequest",
    "approvals:ListApprovalsResponse",
    "viewer",
    f"{A}:list_approvals",
    "Pending (or all) approvals.",
)
GetApproval: Rpc[ap.GetApprovalRequest, ap.ApprovalResponse] = _rpc(
    "GetApproval",
    "approvals:GetApprovalRequest",
    "approvals:ApprovalResponse",
    "viewer",
    f"{A}:get_approval",
    "One approval, pending or decided, with its tool call's whole arguments.",
)
DecideApproval: Rpc[ap.DecideApprovalRequest, ap.ApprovalResponse] = _rpc(
    "DecideApproval",
    "approvals:DecideApprovalRequest",
    "approvals:ApprovalResponse",
    "approver",
    f"{A}:decide_approval",
    "Approve or deny a pending approval.",
)
CreateToken: Rpc[tok.CreateTokenRequest, tok.CreateTokenResponse] = _rpc(
    "CreateToken",
    "tokens:CreateTokenRequest",
    "tokens:CreateTokenResponse",
    "admin",
    f"{K}:create_token",
    "Create an API token (its secret is shown once).",
)
ListTokens: Rpc[tok.ListTokensRequest, tok.ListTokensResponse] = _rpc(
    "ListTokens",
    "tokens:ListTokensRequest",
    "tokens:ListTokensResponse",
    "admin",
    f"{K}:list_tokens",
    "API tokens: id, name, scopes, namespaces, expiry, revocation; never their secrets.",
)
RevokeToken: Rpc[tok.RevokeTokenRequest, Ok] = _rpc(
    "RevokeToken",
    "tokens:RevokeTokenRequest",
    "common:Ok",
    "admin",
    f"{K}:revoke_token",
    "Revoke an API token: every Hub refuses it from its next request.",
)
WhoAmI: Rpc[Empty, tok.WhoAmIResponse] = _rpc(
    "WhoAmI",
    "common:Empty",
    "tokens:WhoAmIResponse",
    "any",
    f"{K}:who_am_i",
    "The caller's identity and scopes.",
)
ResolveAgent: Rpc[ag.ResolveAgentRequest, ag.ResolveAgentResponse] = _rpc(
    "ResolveAgent",
    "agents:ResolveAgentRequest",
    "agents:ResolveAgentResponse",
    "viewer",
    "agen.hub.rpc.agents:resolve_agent",
    "A deployment's A2A endpoints and agent card facts (name, description, skills, paused).",
)
Shutdown: Rpc[Empty, Ok] = _rpc(
    "Shutdown",
    "common:Empty",
    "common:Ok",
    "admin",
    f"{K}:shutdown",
    "Drain and stop the local `agen up`.",
    every_namespace=True,
)
RotateTokenKey: Rpc[tok.RotateTokenKeyRequest, tok.RotateTokenKeyResponse] = _rpc(
    "RotateTokenKey",
    "tokens:RotateTokenKeyRequest",
    "tokens:RotateTokenKeyResponse",
    "admin",
    f"{K}:rotate_token_key",
    "Add a call-token key: published at once, signing after a 5-minute grace; retires the previous one.",
    every_namespace=True,
)

TR, PH, EV_LOG = "agen.hub.rpc.triggers", "agen.hub.rpc.providers", "agen.hub.rpc.events"
ListTriggerEvents: Rpc[sg.ListTriggerEventsRequest, sg.ListTriggerEventsResponse] = _rpc(
    "ListTriggerEvents",
    "signals:ListTriggerEventsRequest",
    "signals:ListTriggerEventsResponse",
    "viewer",
    f"{TR}:list_trigger_events",
    "A deployment's triggers and their fired/missed/skipped/rejected events.",
)
CreateWebhookSecret: Rpc[sg.CreateWebhookSecretRequest, sg.CreateWebhookSecretResponse] = _rpc(
    "CreateWebhookSecret",
    "signals:CreateWebhookSecretRequest",
    "signals:CreateWebhookSecretResponse",
    "operator",
    f"{TR}:create_webhook_secret",
    "Create or rotate a webhook trigger's secret (shown once; only a hash is kept).",
)
ListProviderHolds: Rpc[sg.ListProviderHoldsRequest, sg.ListProviderHoldsResponse] = _rpc(
    "ListProviderHolds",
    "signals:ListProviderHoldsRequest",
    "signals:ListProviderHoldsResponse",
    "viewer",
    f"{PH}:list_provider_holds",
    "Provider accounts held after an account error.",
)
ResumeProvider: Rpc[sg.ResumeProviderRequest, sg.ResumeProviderResponse] = _rpc(
    "ResumeProvider",
    "signals:ResumeProviderRequest",
    "signals:ResumeProviderResponse",
    "admin",
    f"{PH}:resume_provider",
    "End a provider hold at once.",
)
ListEvents: Rpc[sg.ListEventsRequest, sg.ListEventsResponse] = _rpc(
    "ListEvents",
    "signals:ListEventsRequest",
    "signals:ListEventsResponse",
    "viewer",
    f"{EV_LOG}:list_events_rpc",
    "The event log after a cursor, filtered; wait_seconds waits for the first match.",
)
SetNotifyTarget: Rpc[sg.SetNotifyTargetRequest, sg.NotifyTargetResponse] = _rpc(
    "SetNotifyTarget",
    "signals:SetNotifyTargetRequest",
    "signals:NotifyTargetResponse",
    "admin",
    f"{EV_LOG}:set_notify_target",
    "Create or replace a notification target.",
)
ListNotifyTargets: Rpc[sg.ListNotifyTargetsRequest, sg.ListNotifyTargetsResponse] = _rpc(
    "ListNotifyTargets",
    "signals:ListNotifyTargetsRequest",
    "signals:ListNotifyTargetsResponse",
    "viewer",
    f"{EV_LOG}:list_notify_targets",
    "Notification targets with their delivery state.",
)
DeleteNotifyTarget: Rpc[sg.NotifyTargetRef, Ok] = _rpc(
    "DeleteNotifyTarget",
    "signals:NotifyTargetRef",
    "common:Ok",
    "admin",
    f"{EV_LOG}:delete_notify_target",
    "Remove a notification target.",
)
DryRunTask: Rpc[tk.SubmitTaskRequest, sg.DryRunTaskResponse] = _rpc(
    "DryRunTask",
    "tasks:SubmitTaskRequest",
    "signals:DryRunTaskResponse",
    "operator",
    f"{T}:dry_run_task",
    "Run every admission check for a task without queuing it.",
)
SIGNAL_RPCS = (
    ListTriggerEvents,
    CreateWebhookSecret,
    ListProviderHolds,
    ResumeProvider,
    ListEvents,
    SetNotifyTarget,
    ListNotifyTargets,
    DeleteNotifyTarget,
    DryRunTask,
)

# --- observe (issue 7: see what agents do): runs, transcripts, traces, task queries, activity, metrics ---
OB = "agen.hub.observe.runs"
ListRuns: Rpc[ob.ListRunsRequest, ob.ListRunsResponse] = _rpc(
    "ListRuns",
    "observe:ListRunsRequest",
    "observe:ListRunsResponse",
    "viewer",
    f"{OB}:list_runs",
    "Recent runs (roots: one per trace, with the usage of the runs they delegated to).",
)
GetTranscript: Rpc[ob.GetTranscriptRequest, ob.GetTranscriptResponse] = _rpc(
    "GetTranscript",
    "observe:GetTranscriptRequest",
    "observe:GetTranscriptResponse",
    "viewer",
    f"{OB}:get_transcript",
    "What a run (or a task's run) sent to the model and got back.",
)
GetTrace: Rpc[ob.GetTraceRequest, ob.GetTraceResponse] = _rpc(
    "GetTrace",
    "observe:GetTraceRequest",
    "observe:GetTraceResponse",
    "viewer",
    f"{OB}:get_trace",
    "Every span of a trace (by task, run or trace id), across agents.",
)
QueryTask: Rpc[ob.QueryTaskRequest, ob.QueryTaskResponse] = _rpc(
    "QueryTask",
    "observe:QueryTaskRequest",
    "observe:QueryTaskResponse",
    "viewer",
    f"{OB}:query_task",
    "A task's progress, what its run does now and its outcome, without waiting.",
)
ResolveId: Rpc[ids.ResolveIdRequest, ids.ResolveIdResponse] = _rpc(
    "ResolveId",
    "ids:ResolveIdRequest",
    "ids:ResolveIdResponse",
    "viewer",
    "agen.hub.rpc.ids:resolve_id",
    "The whole task, run or approval id for a unique prefix or suffix (the short ids the TUI shows).",
)
GetActivity: Rpc[ob.GetActivityRequest, ob.GetActivityResponse] = _rpc(
    "GetActivity",
    "observe:GetActivityRequest",
    "observe:GetActivityResponse",
    "viewer",
    "agen.hub.observe.live:get_activity",
    "Unfinished runs with what they do now, queues and warnings.",
)
GetMetrics: Rpc[ob.GetMetricsRequest, ob.GetMetricsResponse] = _rpc(
    "GetMetrics",
    "observe:GetMetricsRequest",
    "observe:GetMetricsResponse",
    "viewer",
    "agen.hub.observe.metrics:get_metrics",
    "Per served model calls and latency, entries, call edges, throughput.",
)
OBSERVE_RPCS = (ListRuns, GetTranscript, GetTrace, QueryTask, ResolveId, GetActivity, GetMetrics)
# --- end observe ---

# --- memory and artifacts (issue 20): memory blocks with versions, artifacts agents saved ---
MM = "agen.hub.rpc.memory"
ListMemory: Rpc[mm.ListMemoryRequest, mm.ListMemoryResponse] = _rpc(
    "ListMemory",
    "memory:ListMemoryRequest",
    "memory:ListMemoryResponse",
    "viewer",
    f"{MM}:list_memory",
    "Memory blocks of a namespace, with their versions.",
)
GetMemory: Rpc[mm.GetMemoryRequest, mm.MemoryBlockResponse] = _rpc(
    "GetMemory",
    "memory:GetMemoryRequest",
    "memory:MemoryBlockResponse",
    "viewer",
    f"{MM}:get_memory",
    "A memory block's value (the current version, or an earlier one).",
)
SetMemory: Rpc[mm.SetMemoryRequest, mm.MemoryBlockResponse] = _rpc(
    "SetMemory",
    "memory:SetMemoryRequest",
    "memory:MemoryBlockResponse",
    "operator",
    f"{MM}:set_memory",
    "Replace a memory block's value (creating it); expected_version makes it a compare-and-set.",
)
MemoryHistory: Rpc[mm.MemoryHistoryRequest, mm.MemoryHistoryResponse] = _rpc(
    "MemoryHistory",
    "memory:MemoryHistoryRequest",
    "memory:MemoryHistoryResponse",
    "viewer",
    f"{MM}:memory_history",
    "Every version of a memory block: value, author (run or person), time.",
)
RollbackMemory: Rpc[mm.RollbackMemoryRequest, mm.MemoryBlockResponse] = _rpc(
    "RollbackMemory",
    "memory:RollbackMemoryRequest",
    "memory:MemoryBlockResponse",
    "operator",
    f"{MM}:rollback_memory",
    "Write a new version of a memory block equal to an earlier one.",
)
ListArtifacts: Rpc[mm.ListArtifactsRequest, mm.ListArtifactsResponse] = _rpc(
    "ListArtifacts",
    "memory:ListArtifactsRequest",
    "memory:ListArtifactsResponse",
    "viewer",
    f"{MM}:list_artifacts",
    "Artifacts of a namespace, or of one task or run.",
)
GetArtifact: Rpc[mm.GetArtifactRequest, mm.GetArtifactResponse] = _rpc(
    "GetArtifact",
    "memory:GetArtifactRequest",
    "memory:GetArtifactResponse",
    "viewer",
    f"{MM}:get_artifact",
    "An artifact's content, a page at a time.",
)
MEMORY_RPCS = (
    ListMemory,
    GetMemory,
    SetMemory,
    MemoryHistory,
    RollbackMemory,
    ListArtifacts,
    GetArtifact,
)
# --- end memory and artifacts ---

# --- feedback (issue 20): scores on how tasks went ---
FB = "agen.hub.rpc.feedback"
RecordFeedback: Rpc[fb.RecordFeedbackRequest, fb.RecordFeedbackResponse] = _rpc(
    "RecordFeedback",
    "feedback:RecordFeedbackRequest",
    "feedback:RecordFeedbackResponse",
    "operator",
    f"{FB}:record_feedback",
    "Record a score (-1.0..1.0), note and labels on a task's run.",
)
ListFeedback: Rpc[fb.ListFeedbackRequest, fb.ListFeedbackResponse] = _rpc(
    "ListFeedback",
    "feedback:ListFeedbackRequest",
    "feedback:ListFeedbackResponse",
    "viewer",
    f"{FB}:list_feedback",
    "Feedback, newest first, with the run, task and digest it rates.",
)
FEEDBACK_RPCS = (RecordFeedback, ListFeedback)
# --- end feedback ---

# --- replay and eval (issue 20) ---
EV = "agen.hub.rpc.evals"
GetReplaySource: Rpc[ev.GetReplaySourceRequest, ev.GetReplaySourceResponse] = _rpc(
    "GetReplaySource",
    "evals:GetReplaySourceRequest",
    "evals:GetReplaySourceResponse",
    "operator",
    f"{EV}:get_replay_source",
    "A run's messages, cassette and its deployment's current bundle, for `agen replay`.",
)
RecordEvalRuns: Rpc[ev.RecordEvalRunsRequest, ev.RecordEvalRunsResponse] = _rpc(
    "RecordEvalRuns",
    "evals:RecordEvalRunsRequest",
    "evals:RecordEvalRunsResponse",
    "operator",
    f"{EV}:record_eval_runs",
    "Keep the results of one `agen eval` of a bundle digest.",
)
ListEvalRuns: Rpc[ev.ListEvalRunsRequest, ev.ListEvalRunsResponse] = _rpc(
    "ListEvalRuns",
    "evals:ListEvalRunsRequest",
    "evals:ListEvalRunsResponse",
    "viewer",
    f"{EV}:list_eval_runs",
    "A bundle's recorded evals, newest first, per scenario.",
)
EVAL_RPCS = (GetReplaySource, RecordEvalRuns, ListEvalRuns)
# --- end replay and eval ---

# --- the Nest-facing calls (DESIGN.md §1): a Nest's Manager and instances use only these (and WhoAmI) ---
N, E = "agen.hub.rpc.nests", "agen.hub.rpc.enrolment"
RegisterNest: Rpc[ns.RegisterNestRequest, ns.RegisterNestResponse] = _rpc(
    "RegisterNest",
    "nests:RegisterNestRequest",
    "nests:RegisterNestResponse",
    "nest",
    f"{N}:register_nest",
    "Enrol (or re-enrol by name) a Nest; returns its id.",
)
ReportNest: Rpc[ns.ReportNestRequest, ns.ReportNestResponse] = _rpc(
    "ReportNest",
    "nests:ReportNestRequest",
    "nests:ReportNestResponse",
    "nest",
    f"{N}:report_nest",
    "A Nest's heartbeat with its instances; returns its assignments.",
)
GetDefinitionFiles: Rpc[ns.GetDefinitionFilesRequest, ns.GetDefinitionFilesResponse] = _rpc(
    "GetDefinitionFiles",
    "nests:GetDefinitionFilesRequest",
    "nests:GetDefinitionFilesResponse",
    "nest",
    f"{N}:get_definition_files_rpc",
    "A definition's bundle files (base64), checked.",
)
LeaseTasks: Rpc[ns.LeaseTasksRequest, ns.LeaseTasksResponse] = _rpc(
    "LeaseTasks",
    "nests:LeaseTasksRequest",
    "nests:LeaseTasksResponse",
    "nest",
    f"{N}:lease_tasks",
    "Lease queued tasks of a deployment for one instance (none while the Hub drains).",
)
MarkRunning: Rpc[ns.MarkRunningRequest, Ok] = _rpc(
    "MarkRunning",
    "nests:MarkRunningRequest",
    "common:Ok",
    "nest",
    f"{N}:mark_running",
    "A leased task started (leased -> running).",
)
ExtendLeases: Rpc[ns.ExtendLeasesRequest, ns.ExtendLeasesResponse] = _rpc(
    "ExtendLeases",
    "nests:ExtendLeasesRequest",
    "nests:ExtendLeasesResponse",
    "nest",
    f"{N}:extend_leases",
    "Extend many leases at once; returns the tasks whose lease was lost.",
)
CompleteTask: Rpc[ns.CompleteTaskRequest, Ok] = _rpc(
    "CompleteTask",
    "nests:CompleteTaskRequest",
    "common:Ok",
    "nest",
    f"{N}:complete_task",
    "End a leased task with its outcome (fenced by its lease id).",
)
ReleaseTask: Rpc[ns.ReleaseTaskRequest, Ok] = _rpc(
    "ReleaseTask",
    "nests:ReleaseTaskRequest",
    "common:Ok",
    "nest",
    f"{N}:release_task",
    "Give a leased task back to the queue (fenced by its lease id).",
)
SuspendTask: Rpc[ns.SuspendTaskRequest, Ok] = _rpc(
    "SuspendTask",
    "nests:SuspendTaskRequest",
    "common:Ok",
    "nest",
    f"{N}:suspend_task",
    "A leased task's run suspended until something arrives (fenced by its lease id).",
)
ReportProgress: Rpc[ns.ReportProgressRequest, ns.ReportProgressResponse] = _rpc(
    "ReportProgress",
    "nests:ReportProgressRequest",
    "nests:ReportProgressResponse",
    "nest",
    f"{N}:report_progress",
    "A running task's latest progress (report_progress tool).",
)
WaitForWork: Rpc[ns.WaitForWorkRequest, ns.WaitForWorkResponse] = _rpc(
    "WaitForWork",
    "nests:WaitForWorkRequest",
    "nests:WaitForWorkResponse",
    "nest",
    f"{N}:wait_for_work",
    "Long-poll until tasks may have become leasable since a work generation.",
)
GetTokenKeys: Rpc[Empty, ns.GetTokenKeysResponse] = _rpc(
    "GetTokenKeys",
    "common:Empty",
    "nests:GetTokenKeysResponse",
    "nest",
    f"{E}:get_token_keys",
    "The Hub's public keys that agents' call tokens verify against (a Gateway checks callers offline).",
)
RenewNestCertificate: Rpc[ns.RenewNestCertificateRequest, ns.RenewNestCertificateResponse] = _rpc(
    "RenewNestCertificate",
    "nests:RenewNestCertificateRequest",
    "nests:RenewNestCertificateResponse",
    "nest",
    f"{E}:renew_nest_certificate",
    "A TLS Hub signs a fresh key's CSR for the calling Nest, over its current mTLS connection; the "
    "current certificate works until the new one is first used.",
)
CreateJoinToken: Rpc[ns.CreateJoinTokenRequest, ns.CreateJoinTokenResponse] = _rpc(
    "CreateJoinToken",
    "nests:CreateJoinTokenRequest",
    "nests:CreateJoinTokenResponse",
    "admin",
    f"{E}:create_join_token",
    "A single-use token that enrols one Nest (`agen nest run --join-token`), with labels it gets.",
    every_namespace=True,
)
EnrolNest: Rpc[ns.EnrolNestRequest, ns.EnrolNestResponse] = _rpc(
    "EnrolNest",
    "nests:EnrolNestRequest",
    "nests:EnrolNestResponse",
    "join",
    f"{E}:enrol_nest",
    "Use up a join token: the Nest is registered and receives its own credential (scope nest) and, "
    "from a TLS Hub, its client certificate signed from its CSR in the same transaction.",
)
ListNests: Rpc[ns.ListNestsRequest, ns.ListNestsResponse] = _rpc(
    "ListNests",
    "nests:ListNestsRequest",
    "nests:ListNestsResponse",
    "viewer",
    f"{E}:list_nests",
    "Every Nest: labels, capacity, live instances, last heartbeat, state.",
)
RevokeNest: Rpc[ns.RevokeNestRequest, Ok] = _rpc(
    "RevokeNest",
    "nests:RevokeNestRequest",
    "common:Ok",
    "admin",
    f"{E}:revoke_nest",
    "End a Nest's credential, certificates, assignments and leases for good; its tasks run elsewhere.",
    every_namespace=True,
)
FLEET_RPCS = (CreateJoinToken, EnrolNest, ListNests, RevokeNest)
# Platform secrets (agen.hub.rpc.secrets): values go in through admin calls and out only to a Nest.
S = "agen.hub.rpc.secrets"
SetSecret: Rpc[sec.SetSecretRequest, sec.SetSecretResponse] = _rpc(
    "SetSecret",
    "secrets:SetSecretRequest",
    "secrets:SetSecretResponse",
    "admin",
    f"{S}:set_secret",
    "Create or replace a platform secret (sealed under the Hub's KEK) and its deployment grants.",
)
ListSecrets: Rpc[sec.ListSecretsRequest, sec.ListSecretsResponse] = _rpc(
    "ListSecrets",
    "secrets:ListSecretsRequest",
    "secrets:ListSecretsResponse",
    "admin",
    f"{S}:list_secrets",
    "A namespace's platform secrets: names, grants, whether sealed, updated time; never values.",
)
DeleteSecret: Rpc[sec.DeleteSecretRequest, Ok] = _rpc(
    "DeleteSecret",
    "secrets:DeleteSecretRequest",
    "common:Ok",
    "admin",
    f"{S}:delete_secret",
    "Remove a platform secret.",
)
GetPlatformSecrets: Rpc[sec.GetPlatformSecretsRequest, sec.GetPlatformSecretsResponse] = _rpc(
    "GetPlatformSecrets",
    "secrets:GetPlatformSecretsRequest",
    "secrets:GetPlatformSecretsResponse",
    "nest",
    f"{S}:get_platform_secrets",
    "The platform secrets a deployment assigned to this Nest declares and is granted (Nests only).",
)
SECRET_RPCS = (SetSecret, ListSecrets, DeleteSecret)
# Delegation: a running task's engine, through its Nest (agen.hub.rpc.children).
C = "agen.hub.rpc.children"
SubmitChildTask: Rpc[dg.SubmitChildTaskRequest, dg.ChildTaskResponse] = _rpc(
    "SubmitChildTask",
    "delegation:SubmitChildTaskRequest",
    "delegation:ChildTaskResponse",
    "nest",
    f"{C}:submit_child_task",
    "Submit a child task of a running task (call_agent, start_agent); the call key makes it idempotent.",
)
WaitChildTask: Rpc[dg.WaitChildTaskRequest, dg.ChildTaskResponse] = _rpc(
    "WaitChildTask",
    "delegation:WaitChildTaskRequest",
    "delegation:ChildTaskResponse",
    "nest",
    f"{C}:wait_child_task",
    "A child task's state once it ended or wait_seconds (at most 60) passed.",
)
CheckTurn: Rpc[dg.CheckTurnRequest, dg.CheckTurnResponse] = _rpc(
    "CheckTurn",
    "delegation:CheckTurnRequest",
    "delegation:CheckTurnResponse",
    "nest",
    f"{C}:check_turn",
    "Before a model call: joined children still running, their undelivered results, the tree budget.",
)
AckInbox: Rpc[dg.AckInboxRequest, Ok] = _rpc(
    "AckInbox",
    "delegation:AckInboxRequest",
    "common:Ok",
    "nest",
    f"{C}:ack_inbox",
    "Inbox rows the run checkpointed: they are not delivered again.",
)
QueryChildTask: Rpc[dg.ChildTaskRef, dg.QueryChildTaskResponse] = _rpc(
    "QueryChildTask",
    "delegation:ChildTaskRef",
    "delegation:QueryChildTaskResponse",
    "nest",
    f"{C}:query_child_task",
    "State, progress and outcome of a descendant task (query_agent); refused for any other task.",
)
SignalChildTask: Rpc[dg.SignalChildTaskRequest, Ok] = _rpc(
    "SignalChildTask",
    "delegation:SignalChildTaskRequest",
    "common:Ok",
    "nest",
    f"{C}:signal_child_task",
    "Send a message to a descendant task's inbox (signal_agent); refused for any other task.",
)
AcquireLock: Rpc[dg.AcquireLockRequest, dg.AcquireLockResponse] = _rpc(
    "AcquireLock",
    "delegation:AcquireLockRequest",
    "delegation:AcquireLockResponse",
    "nest",
    f"{C}:acquire_lock",
    "Grant a named lock to a running task mid-run (acquire_lock); its fence, or none while held.",
)
ReleaseLock: Rpc[dg.ReleaseLockRequest, dg.ReleaseLockResponse] = _rpc(
    "ReleaseLock",
    "delegation:ReleaseLockRequest",
    "delegation:ReleaseLockResponse",
    "nest",
    f"{C}:release_lock",
    "Drop a lock a running task acquired (release_lock).",
)
ResolveChildAgent: Rpc[dg.ResolveChildAgentRequest, dg.ResolveChildAgentResponse] = _rpc(
    "ResolveChildAgent",
    "delegation:ResolveChildAgentRequest",
    "delegation:ResolveChildAgentResponse",
    "nest",
    f"{C}:resolve_child_agent",
    "A deployment's A2A endpoints and a call token naming the running task's deployment as caller (1 h).",
)
CountA2ACall: Rpc[dg.CountA2ACallRequest, Ok] = _rpc(
    "CountA2ACall",
    "delegation:CountA2ACallRequest",
    "common:Ok",
    "nest",
    f"{C}:count_a2a_call",
    "Count an A2A call_agent towards the run's maxFanOut and the tree's maxTotalDelegations (once per key).",
)
NEST_RPCS = (
    RegisterNest,
    ReportNest,
    GetDefinitionFiles,
    LeaseTasks,
    MarkRunning,
    ExtendLeases,
    CompleteTask,
    ReleaseTask,
    SuspendTask,
    ReportProgress,
    WaitForWork,
    GetTokenKeys,
    RenewNestCertificate,
    SubmitChildTask,
    WaitChildTask,
    CheckTurn,
    AckInbox,
    QueryChildTask,
    SignalChildTask,
    AcquireLock,
    ReleaseLock,
    ResolveChildAgent,
    CountA2ACall,
    GetPlatformSecrets,
)

RPCS: dict[str, Rpc[Any, Any]] = {
    r.name: r
    for r in (
        CreateDeployment,
        UpdateDeployment,
        GetDeployment,
        ListDeployments,
        ListInstances,
        ScaleDeployment,
        PauseDeployment,
        DeleteDeployment,
        GetLogs,
        SubmitTask,
        GetTask,
        ListTasks,
        CancelTask,
        PauseTask,
        ResumeTask,
        GetTaskTree,
        ListApprovals,
        GetApproval,
        DecideApproval,
        CreateToken,
        ListTokens,
        RevokeToken,
        WhoAmI,
        ResolveAgent,
        Shutdown,
        RotateTokenKey,
        *SIGNAL_RPCS,
        *OBSERVE_RPCS,
        *MEMORY_RPCS,
        *FEEDBACK_RPCS,
        *EVAL_RPCS,
        *NEST_RPCS,
        *FLEET_RPCS,
        *SECRET_RPCS,
    )
}
