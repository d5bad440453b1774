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
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

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
    """One API method. ``starts_work`` RPCs are refused (503) while the Hub drains."""

    name: str
    request: type[Req]
    response: type[Resp]
    scope: str
    handler_path: str
    doc: str
    starts_work: bool = False
    _resolved: list[Handler] = field(default_factory=list, compare=False, repr=False)

    @property
    def path(self) -> str:
        return f"/v1/{self.name}"

    def handler(self) -> Handler:
        if not self._resolved:
            module, _, attr = self.handler_path.partition(":")
            self._resolved.append(getattr(importlib.import_module(module), attr))
        return self._resolved[0]


def _rpc(
    name: str,
    req: type[Req],
    resp: type[Resp],
    scope: str,
    handler: str,
    doc: str,
    *,
    starts_work: bool = False,
) -> Rpc[Req, Resp]:
    return Rpc(name, req, resp, scope, handler, doc, starts_work)


D, T, A, K = (
    "agen.hub.rpc.deployments",
    "agen.hub.rpc.tasks",
    "agen.hub.rpc.approvals",
    "agen.hub.rpc.tokens",
)

CreateDeployment = _rpc(
    "CreateDeployment",
    dp.CreateDeploymentRequest,
    dp.DeploymentResponse,
    "operator",
    f"{D}:create_deployment",
    "Create or update a deployment from bundle files.",
    starts_work=True,
)
UpdateDeployment = _rpc(
    "UpdateDeployment",
    dp.CreateDeploymentRequest,
    dp.DeploymentResponse,
    "operator",
    f"{D}:update_deployment",
    "Update an existing deployment from bundle files.",
    starts_work=True,
)
GetDeployment = _rpc(
    "GetDeployment",
    dp.GetDeploymentRequest,
    dp.DeploymentResponse,
    "viewer",
    f"{D}:get_deployment",
    "One deployment with queue counts and instances.",
)
ListDeployments = _rpc(
    "ListDeployments",
    dp.ListDeploymentsRequest,
    dp.ListDeploymentsResponse,
    "viewer",
    f"{D}:list_deployments",
    "Deployments of a namespace (or every namespace).",
)
ListInstances = _rpc(
    "ListInstances",
    dp.ListInstancesRequest,
    dp.ListInstancesResponse,
    "viewer",
    "agen.hub.fleet.instances:list_instances",
    "Every live instance on every Nest.",
)
ScaleDeployment = _rpc(
    "ScaleDeployment",
    dp.ScaleDeploymentRequest,
    dp.DeploymentResponse,
    "operator",
    f"{D}:scale_deployment",
    "Set desired instances (counts as activity).",
    starts_work=True,
)
PauseDeployment = _rpc(
    "PauseDeployment",
    dp.PauseDeploymentRequest,
    dp.DeploymentResponse,
    "operator",
    f"{D}:pause_deployment",
    "Stop (hold at zero) or start a deployment.",
)
DeleteDeployment = _rpc(
    "DeleteDeployment",
    dp.DeleteDeploymentRequest,
    dp.DeleteDeploymentResponse,
    "operator",
    f"{D}:delete_deployment",
    "Delete a deployment, cancelling its unfinished tasks.",
)
GetLogs = _rpc(
    "GetLogs",
    dp.GetLogsRequest,
    dp.GetLogsResponse,
    "viewer",
    f"{D}:get_logs",
    "The deployment's operational log.",
)
SubmitTask = _rpc(
    "SubmitTask",
    tk.SubmitTaskRequest,
    tk.TaskResponse,
    "operator",
    f"{T}:submit_task",
    "Queue a task for a deployment.",
    starts_work=True,
)
GetTask = _rpc(
    "GetTask",
    tk.GetTaskRequest,
    tk.TaskResponse,
    "viewer",
    f"{T}:get_task",
    "A task; wait_seconds waits for its end or for an approval it waits on.",
)
ListTasks = _rpc(
    "ListTasks",
    tk.ListTasksRequest,
    tk.ListTasksResponse,
    "viewer",
    f"{T}:list_tasks",
    "Recent tasks, or scheduled ones.",
)
CancelTask = _rpc(
    "CancelTask",
    tk.CancelTaskRequest,
    tk.TaskResponse,
    "operator",
    "agen.hub.rpc.trees:cancel_task",
    "Cancel a task (tree: its whole tree); a running one stops, or with mode graceful gets a last turn first.",
)
PauseTask = _rpc(
    "PauseTask",
    tk.PauseTaskRequest,
    tk.TaskResponse,
    "operator",
    "agen.hub.rpc.trees:pause_task",
    "Hold a task (tree: its whole tree) until resumed (or until a time).",
)
ResumeTask = _rpc(
    "ResumeTask",
    tk.ResumeTaskRequest,
    tk.TaskResponse,
    "operator",
    "agen.hub.rpc.trees:resume_task",
    "End a hold started by PauseTask (tree: on its whole tree).",
    starts_work=True,
)
GetTaskTree = _rpc(
    "GetTaskTree",
    tk.GetTaskTreeRequest,
    tk.GetTaskTreeResponse,
    "viewer",
    "agen.hub.rpc.trees:get_task_tree",
    "Every task of the tree a task belongs to, with state, duration and cost.",
)
ListApprovals = _rpc(
    "ListApprovals",
    ap.ListApprovalsRequest,
    ap.ListApprovalsResponse,
    "viewer",
    f"{A}:list_approvals",
    "Pending (or all) approvals.",
)
DecideApproval = _rpc(
    "DecideApproval",
    ap.DecideApprovalRequest,
    ap.ApprovalResponse,
    "approver",
    f"{A}:decide_approval",
    "Approve or deny a pending approval.",
)
CreateToken = _rpc(
    "CreateToken",
    tok.CreateTokenRequest,
    tok.CreateTokenResponse,
    "admin",
    f"{K}:create_token",
    "Create an API token (its secret is shown once).",
)
WhoAmI = _rpc(
    "WhoAmI", Empty, tok.WhoAmIResponse, "any", f"{K}:who_am_i", "The caller's identity and scopes."
)
ResolveAgent = _rpc(
    "ResolveAgent",
    ag.ResolveAgentRequest,
    ag.ResolveAgentResponse,
    "viewer",
    "agen.hub.rpc.agents:resolve_agent",
    "A deployment's A2A endpoints and agent card facts (name, description, skills, paused).",
)
Shutdown = _rpc(
    "Shutdown", Empty, Ok, "admin", f"{K}:shutdown", "Drain and stop the local `agen up`."
)
RotateTokenKey = _rpc(
    "RotateTokenKey",
    tok.RotateTokenKeyRequest,
    tok.RotateTokenKeyResponse,
    "admin",
    f"{K}:rotate_token_key",
    "Add a call-token key: published at once, signing after a 5-minute grace; retires the previous one.",
)

TR, PH, EV_LOG = "agen.hub.rpc.triggers", "agen.hub.rpc.providers", "agen.hub.rpc.events"
ListTriggerEvents = _rpc(
    "ListTriggerEvents",
    sg.ListTriggerEventsRequest,
    sg.ListTriggerEventsResponse,
    "viewer",
    f"{TR}:list_trigger_events",
    "A deployment's triggers and their fired/missed/skipped/rejected events.",
)
CreateWebhookSecret = _rpc(
    "CreateWebhookSecret",
    sg.CreateWebhookSecretRequest,
    sg.CreateWebhookSecretResponse,
    "operator",
    f"{TR}:create_webhook_secret",
    "Create or rotate a webhook trigger's secret (shown once; only a hash is kept).",
)
ListProviderHolds = _rpc(
    "ListProviderHolds",
    sg.ListProviderHoldsRequest,
    sg.ListProviderHoldsResponse,
    "viewer",
    f"{PH}:list_provider_holds",
    "Provider accounts held after an account error.",
)
ResumeProvider = _rpc(
    "ResumeProvider",
    sg.ResumeProviderRequest,
    sg.ResumeProviderResponse,
    "admin",
    f"{PH}:resume_provider",
    "End a provider hold at once.",
)
ListEvents = _rpc(
    "ListEvents",
    sg.ListEventsRequest,
    sg.ListEventsResponse,
    "viewer",
    f"{EV_LOG}:list_events_rpc",
    "The event log after a cursor, filtered; wait_seconds waits for the first match.",
)
SetNotifyTarget = _rpc(
    "SetNotifyTarget",
    sg.SetNotifyTargetRequest,
    sg.NotifyTargetResponse,
    "admin",
    f"{EV_LOG}:set_notify_target",
    "Create or replace a notification target.",
)
ListNotifyTargets = _rpc(
    "ListNotifyTargets",
    sg.ListNotifyTargetsRequest,
    sg.ListNotifyTargetsResponse,
    "viewer",
    f"{EV_LOG}:list_notify_targets",
    "Notification targets with their delivery state.",
)
DeleteNotifyTarget = _rpc(
    "DeleteNotifyTarget",
    sg.NotifyTargetRef,
    Ok,
    "admin",
    f"{EV_LOG}:delete_notify_target",
    "Remove a notification target.",
)
DryRunTask = _rpc(
    "DryRunTask",
    tk.SubmitTaskRequest,
    sg.DryRunTaskResponse,
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
ListRuns = _rpc(
    "ListRuns",
    ob.ListRunsRequest,
    ob.ListRunsResponse,
    "viewer",
    f"{OB}:list_runs",
    "Recent runs (roots: one per trace, with the usage of the runs they delegated to).",
)
GetTranscript = _rpc(
    "GetTranscript",
    ob.GetTranscriptRequest,
    ob.GetTranscriptResponse,
    "viewer",
    f"{OB}:get_transcript",
    "What a run (or a task's run) sent to the model and got back.",
)
GetTrace = _rpc(
    "GetTrace",
    ob.GetTraceRequest,
    ob.GetTraceResponse,
    "viewer",
    f"{OB}:get_trace",
    "Every span of a trace (by task, run or trace id), across agents.",
)
QueryTask = _rpc(
    "QueryTask",
    ob.QueryTaskRequest,
    ob.QueryTaskResponse,
    "viewer",
    f"{OB}:query_task",
    "A task's progress, what its run does now and its outcome, without waiting.",
)
ResolveId = _rpc(
    "ResolveId",
    ids.ResolveIdRequest,
    ids.ResolveIdResponse,
    "viewer",
    "agen.hub.rpc.ids:resolve_id",
    "The whole task, run or approval id for a unique prefix or suffix (the short ids the TUI shows).",
)
GetActivity = _rpc(
    "GetActivity",
    ob.GetActivityRequest,
    ob.GetActivityResponse,
    "viewer",
    "agen.hub.observe.live:get_activity",
    "Unfinished runs with what they do now, queues and warnings.",
)
GetMetrics = _rpc(
    "GetMetrics",
    ob.GetMetricsRequest,
    ob.GetMetricsResponse,
    "viewer",
    "agen.hub.observe.metrics:get_metrics",
    "Per served model calls and latency, entries, call edges, throughput.",
)
OBSERVE_RPCS = (ListRuns, GetTranscript, GetTrace, QueryTask, ResolveId, GetActivity, GetMetrics)
# --- end observe ---

# --- memory and artifacts (issue 20): memory blocks with versions, artifacts agents saved ---
MM = "agen.hub.rpc.memory"
ListMemory = _rpc(
    "ListMemory",
    mm.ListMemoryRequest,
    mm.ListMemoryResponse,
    "viewer",
    f"{MM}:list_memory",
    "Memory blocks of a namespace, with their versions.",
)
GetMemory = _rpc(
    "GetMemory",
    mm.GetMemoryRequest,
    mm.MemoryBlockResponse,
    "viewer",
    f"{MM}:get_memory",
    "A memory block's value (the current version, or an earlier one).",
)
SetMemory = _rpc(
    "SetMemory",
    mm.SetMemoryRequest,
    mm.MemoryBlockResponse,
    "operator",
    f"{MM}:set_memory",
    "Replace a memory block's value (creating it); expected_version makes it a compare-and-set.",
)
MemoryHistory = _rpc(
    "MemoryHistory",
    mm.MemoryHistoryRequest,
    mm.MemoryHistoryResponse,
    "viewer",
    f"{MM}:memory_history",
    "Every version of a memory block: value, author (run or person), time.",
)
RollbackMemory = _rpc(
    "RollbackMemory",
    mm.RollbackMemoryRequest,
    mm.MemoryBlockResponse,
    "operator",
    f"{MM}:rollback_memory",
    "Write a new version of a memory block equal to an earlier one.",
)
ListArtifacts = _rpc(
    "ListArtifacts",
    mm.ListArtifactsRequest,
    mm.ListArtifactsResponse,
    "viewer",
    f"{MM}:list_artifacts",
    "Artifacts of a namespace, or of one task or run.",
)
GetArtifact = _rpc(
    "GetArtifact",
    mm.GetArtifactRequest,
    mm.GetArtifactResponse,
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
RecordFeedback = _rpc(
    "RecordFeedback",
    fb.RecordFeedbackRequest,
    fb.RecordFeedbackResponse,
    "operator",
    f"{FB}:record_feedback",
    "Record a score (-1.0..1.0), note and labels on a task's run.",
)
ListFeedback = _rpc(
    "ListFeedback",
    fb.ListFeedbackRequest,
    fb.ListFeedbackResponse,
    "viewer",
    f"{FB}:list_feedback",
    "Feedback, newest first, with the run, task and digest it rates.",
)
FEEDBACK_RPCS = (RecordFeedback, ListFeedback)
# --- end feedback ---

# --- replay and eval (issue 20) ---
EV = "agen.hub.rpc.evals"
GetReplaySource = _rpc(
    "GetReplaySource",
    ev.GetReplaySourceRequest,
    ev.GetReplaySourceResponse,
    "operator",
    f"{EV}:get_replay_source",
    "A run's messages, cassette and its deployment's current bundle, for `agen replay`.",
)
RecordEvalRuns = _rpc(
    "RecordEvalRuns",
    ev.RecordEvalRunsRequest,
    ev.RecordEvalRunsResponse,
    "operator",
    f"{EV}:record_eval_runs",
    "Keep the results of one `agen eval` of a bundle digest.",
)
ListEvalRuns = _rpc(
    "ListEvalRuns",
    ev.ListEvalRunsRequest,
    ev.ListEvalRunsResponse,
    "viewer",
    f"{EV}:list_eval_runs",
    "A bundle's recorded evals, newest first, per scenario.",
)
EVAL_RPCS = (GetReplaySource, RecordEvalRuns, ListEvalRuns)
# --- end replay and eval ---

# --- the Nest-facing calls (DESIGN.md §1): a Nest's Manager and instances use only these (and WhoAmI) ---
N = "agen.hub.rpc.nests"
RegisterNest = _rpc(
    "RegisterNest",
    ns.RegisterNestRequest,
    ns.RegisterNestResponse,
    "nest",
    f"{N}:register_nest",
    "Enrol (or re-enrol by name) a Nest; returns its id.",
)
ReportNest = _rpc(
    "ReportNest",
    ns.ReportNestRequest,
    ns.ReportNestResponse,
    "nest",
    f"{N}:report_nest",
    "A Nest's heartbeat with its instances; returns its assignments.",
)
GetDefinitionFiles = _rpc(
    "GetDefinitionFiles",
    ns.GetDefinitionFilesRequest,
    ns.GetDefinitionFilesResponse,
    "nest",
    f"{N}:get_definition_files_rpc",
    "A definition's bundle files (base64), checked.",
)
LeaseTasks = _rpc(
    "LeaseTasks",
    ns.LeaseTasksRequest,
    ns.LeaseTasksResponse,
    "nest",
    f"{N}:lease_tasks",
    "Lease queued tasks of a deployment for one instance (none while the Hub drains).",
)
MarkRunning = _rpc(
    "MarkRunning",
    ns.MarkRunningRequest,
    Ok,
    "nest",
    f"{N}:mark_running",
    "A leased task started (leased -> running).",
)
ExtendLeases = _rpc(
    "ExtendLeases",
    ns.ExtendLeasesRequest,
    ns.ExtendLeasesResponse,
    "nest",
    f"{N}:extend_leases",
    "Extend many leases at once; returns the tasks whose lease was lost.",
)
CompleteTask = _rpc(
    "CompleteTask",
    ns.CompleteTaskRequest,
    Ok,
    "nest",
    f"{N}:complete_task",
    "End a leased task with its outcome (fenced by its lease id).",
)
ReleaseTask = _rpc(
    "ReleaseTask",
    ns.ReleaseTaskRequest,
    Ok,
    "nest",
    f"{N}:release_task",
    "Give a leased task back to the queue (fenced by its lease id).",
)
SuspendTask = _rpc(
    "SuspendTask",
    ns.SuspendTaskRequest,
    Ok,
    "nest",
    f"{N}:suspend_task",
    "A leased task's run suspended until something arrives (fenced by its lease id).",
)
ReportProgress = _rpc(
    "ReportProgress",
    ns.ReportProgressRequest,
    ns.ReportProgressResponse,
    "nest",
    f"{N}:report_progress",
    "A running task's latest progress (report_progress tool).",
)
WaitForWork = _rpc(
    "WaitForWork",
    ns.WaitForWorkRequest,
    ns.WaitForWorkResponse,
    "nest",
    f"{N}:wait_for_work",
    "Long-poll until tasks may have become leasable since a work generation.",
)
GetTokenKeys = _rpc(
    "GetTokenKeys",
    Empty,
    ns.GetTokenKeysResponse,
    "nest",
    f"{N}:get_token_keys",
    "The Hub's public keys that agents' call tokens verify against (a Gateway checks callers offline).",
)
RenewNestCertificate = _rpc(
    "RenewNestCertificate",
    ns.RenewNestCertificateRequest,
    ns.RenewNestCertificateResponse,
    "nest",
    f"{N}:renew_nest_certificate",
    "A TLS Hub signs a fresh key's CSR for the calling Nest, over its current mTLS connection; the "
    "current certificate works until the new one is first used.",
)
CreateJoinToken = _rpc(
    "CreateJoinToken",
    ns.CreateJoinTokenRequest,
    ns.CreateJoinTokenResponse,
    "admin",
    f"{N}:create_join_token",
    "A single-use token that enrols one Nest (`agen nest run --join-token`), with labels it gets.",
)
EnrolNest = _rpc(
    "EnrolNest",
    ns.EnrolNestRequest,
    ns.EnrolNestResponse,
    "join",
    f"{N}:enrol_nest",
    "Use up a join token: the Nest is registered and receives its own credential (scope nest) and, "
    "from a TLS Hub, its client certificate signed from its CSR in the same transaction.",
)
ListNests = _rpc(
    "ListNests",
    ns.ListNestsRequest,
    ns.ListNestsResponse,
    "viewer",
    f"{N}:list_nests",
    "Every Nest: labels, capacity, live instances, last heartbeat, state.",
)
RevokeNest = _rpc(
    "RevokeNest",
    ns.RevokeNestRequest,
    Ok,
    "admin",
    f"{N}:revoke_nest",
    "End a Nest's credential, certificates, assignments and leases for good; its tasks run elsewhere.",
)
FLEET_RPCS = (CreateJoinToken, EnrolNest, ListNests, RevokeNest)
# Platform secrets (agen.hub.rpc.secrets): values go in through admin calls and out only to a Nest.
S = "agen.hub.rpc.secrets"
SetSecret = _rpc(
    "SetSecret",
    sec.SetSecretRequest,
    sec.SetSecretResponse,
    "admin",
    f"{S}:set_secret",
    "Create or replace a platform secret (sealed under the Hub's KEK) and its deployment grants.",
)
ListSecrets = _rpc(
    "ListSecrets",
    sec.ListSecretsRequest,
    sec.ListSecretsResponse,
    "admin",
    f"{S}:list_secrets",
    "A namespace's platform secrets: names, grants, whether sealed, updated time; never values.",
)
DeleteSecret = _rpc(
    "DeleteSecret",
    sec.DeleteSecretRequest,
    Ok,
    "admin",
    f"{S}:delete_secret",
    "Remove a platform secret.",
)
GetPlatformSecrets = _rpc(
    "GetPlatformSecrets",
    sec.GetPlatformSecretsRequest,
    sec.GetPlatformSecretsResponse,
    "nest",
    f"{S}:get_platform_secrets",
    "The platform secrets a deployment assigned to this Nest declares and is granted (Nests only).",
)
SECRET_RPCS = (SetSecret, ListSecrets, DeleteSecret)
# Delegation: a running task's engine, through its Nest (agen.hub.rpc.children).
C = "agen.hub.rpc.children"
SubmitChildTask = _rpc(
    "SubmitChildTask",
    dg.SubmitChildTaskRequest,
    dg.ChildTaskResponse,
    "nest",
    f"{C}:submit_child_task",
    "Submit a child task of a running task (call_agent, start_agent); the call key makes it idempotent.",
)
WaitChildTask = _rpc(
    "WaitChildTask",
    dg.WaitChildTaskRequest,
    dg.ChildTaskResponse,
    "nest",
    f"{C}:wait_child_task",
    "A child task's state once it ended or wait_seconds (at most 60) passed.",
)
CheckTurn = _rpc(
    "CheckTurn",
    dg.CheckTurnRequest,
    dg.CheckTurnResponse,
    "nest",
    f"{C}:check_turn",
    "Before a model call: joined children still running, their undelivered results, the tree budget.",
)
AckInbox = _rpc(
    "AckInbox",
    dg.AckInboxRequest,
    Ok,
    "nest",
    f"{C}:ack_inbox",
    "Inbox rows the run checkpointed: they are not delivered again.",
)
QueryChildTask = _rpc(
    "QueryChildTask",
    dg.ChildTaskRef,
    dg.QueryChildTaskResponse,
    "nest",
    f"{C}:query_child_task",
    "State, progress and outcome of a descendant task (query_agent); refused for any other task.",
)
SignalChildTask = _rpc(
    "SignalChildTask",
    dg.SignalChildTaskRequest,
    Ok,
    "nest",
    f"{C}:signal_child_task",
    "Send a message to a descendant task's inbox (signal_agent); refused for any other task.",
)
AcquireLock = _rpc(
    "AcquireLock",
    dg.AcquireLockRequest,
    dg.AcquireLockResponse,
    "nest",
    f"{C}:acquire_lock",
    "Grant a named lock to a running task mid-run (acquire_lock); its fence, or none while held.",
)
ReleaseLock = _rpc(
    "ReleaseLock",
    dg.ReleaseLockRequest,
    dg.ReleaseLockResponse,
    "nest",
    f"{C}:release_lock",
    "Drop a lock a running task acquired (release_lock).",
)
ResolveChildAgent = _rpc(
    "ResolveChildAgent",
    dg.ResolveChildAgentRequest,
    dg.ResolveChildAgentResponse,
    "nest",
    f"{C}:resolve_child_agent",
    "A deployment's A2A endpoints and a call token naming the running task's deployment as caller (1 h).",
)
CountA2ACall = _rpc(
    "CountA2ACall",
    dg.CountA2ACallRequest,
    Ok,
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
        DecideApproval,
        CreateToken,
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
