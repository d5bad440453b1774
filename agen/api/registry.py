"""Every RPC declared once: its name, request and response models, scope, handler and rules.

One declaration per RPC, ``Name: Rpc[wire_module.Request, wire_module.Response] = _rpc(scope,
handler, doc, rules…)``: the variable names the RPC and its annotation names the models, both
for mypy (callers are checked against the models) and for the runtime, which reads the
annotation's text once at import (``_named``) and imports a wire module on first use, so an
HTTP-only client never imports the Hub and a command loads only the wire modules it talks in.
HTTP routes (``POST /v1/<Name>``), the OpenAPI document, /mcp's tools, authorization
(``agen.api.dispatch``) and the in-process client all come from ``RPCS``, so the CLI, the TUI and
remote callers cannot drift apart.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import BaseModel

if TYPE_CHECKING:
    from agen.wire import (
        agents,
        approvals,
        common,
        delegation,
        deployments,
        evals,
        feedback,
        ids,
        memory,
        nests,
        observe,
        secrets,
        signals,
        tasks,
        tokens,
    )


Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)
Handler = Callable[[Any, Any, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Rpc(Generic[Req, Resp]):
    """One API method and the rules that go with it (``agen.api.dispatch`` and ``agen.api.app``
    apply them; docs/security.md describes them):

    ``starts_work``: refused (503) while the Hub drains. ``every_namespace``: acts on the whole Hub
    (stop it, sign every namespace's tokens, add or end a Nest that runs every namespace's work), so
    a token limited to namespaces is refused it whatever its scope. ``call_token``: what a call
    token may do (seed 000 §10), i.e. what the Gateway does for an A2A caller, for the one
    deployment the token names. ``person_only``: a decision only the person may make, refused to
    tokens acting on someone's behalf. ``bundle_body``: the body carries bundle files, so it gets
    the bundle size cap instead of the request cap; ``file_body``: it may carry files given with
    the input (agen.domain.attachments), so it gets their cap. ``traceparent_header``: the W3C
    ``traceparent`` header fills the request's field of that name when the body has none.
    """

    scope: str
    handler_path: str
    doc: str
    starts_work: bool = False
    every_namespace: bool = False
    call_token: bool = False
    person_only: bool = False
    bundle_body: bool = False
    file_body: bool = False
    traceparent_header: bool = False
    name: str = ""  # the variable it is declared as (``_named``)
    request_ref: str = ""  # "<agen.wire module>:<model>", from the annotation
    response_ref: str = ""
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
    scope: str,
    handler: str,
    doc: str,
    *,
    starts_work: bool = False,
    every_namespace: bool = False,
    call_token: bool = False,
    person_only: bool = False,
    bundle_body: bool = False,
    file_body: bool = False,
    traceparent_header: bool = False,
) -> Rpc[Any, Any]:
    """An RPC not yet named: ``_named`` gives it its variable's name and its annotation's models."""
    return Rpc(
        scope,
        handler,
        doc,
        starts_work=starts_work,
        every_namespace=every_namespace,
        call_token=call_token,
        person_only=person_only,
        bundle_body=bundle_body,
        file_body=file_body,
        traceparent_header=traceparent_header,
    )


D, T, A, K = (
    "agen.hub.rpc.deployments",
    "agen.hub.rpc.tasks",
    "agen.hub.rpc.approvals",
    "agen.hub.rpc.tokens",
)

CreateDeployment: Rpc[deployments.CreateDeploymentRequest, deployments.DeploymentResponse] = _rpc(
    "operator",
    f"{D}:create_deployment",
    "Create or update a deployment from bundle files.",
    starts_work=True,
    bundle_body=True,
)
UpdateDeployment: Rpc[deployments.CreateDeploymentRequest, deployments.DeploymentResponse] = _rpc(
    "operator",
    f"{D}:update_deployment",
    "Update an existing deployment from bundle files.",
    starts_work=True,
    bundle_body=True,
)
GetDeployment: Rpc[deployments.GetDeploymentRequest, deployments.DeploymentResponse] = _rpc(
    "viewer",
    f"{D}:get_deployment",
    "One deployment with queue counts and instances.",
    call_token=True,
)
ListDeployments: Rpc[deployments.ListDeploymentsRequest, deployments.ListDeploymentsResponse] = (
    _rpc(
        "viewer",
        f"{D}:list_deployments",
        "Deployments of a namespace (or every namespace).",
    )
)
ListInstances: Rpc[deployments.ListInstancesRequest, deployments.ListInstancesResponse] = _rpc(
    "viewer",
    f"{D}:list_instances",
    "Every live instance on every Nest.",
)
ScaleDeployment: Rpc[deployments.ScaleDeploymentRequest, deployments.DeploymentResponse] = _rpc(
    "operator",
    f"{D}:scale_deployment",
    "Set desired instances (counts as activity).",
    starts_work=True,
)
PauseDeployment: Rpc[deployments.PauseDeploymentRequest, deployments.DeploymentResponse] = _rpc(
    "operator",
    f"{D}:pause_deployment",
    "Stop (hold at zero) or start a deployment.",
)
DeleteDeployment: Rpc[deployments.DeleteDeploymentRequest, deployments.DeleteDeploymentResponse] = (
    _rpc(
        "operator",
        f"{D}:delete_deployment",
        "Delete a deployment, cancelling its unfinished tasks.",
    )
)
GetLogs: Rpc[deployments.GetLogsRequest, deployments.GetLogsResponse] = _rpc(
    "viewer",
    f"{D}:get_logs",
    "The deployment's operational log.",
)
SubmitTask: Rpc[tasks.SubmitTaskRequest, tasks.TaskResponse] = _rpc(
    "operator",
    f"{T}:submit_task",
    "Queue a task for a deployment.",
    starts_work=True,
    call_token=True,
    file_body=True,
    traceparent_header=True,
)
GetTask: Rpc[tasks.GetTaskRequest, tasks.TaskResponse] = _rpc(
    "viewer",
    f"{T}:get_task",
    "A task; wait_seconds waits for its end or for an approval it waits on.",
    call_token=True,
)
ListTasks: Rpc[tasks.ListTasksRequest, tasks.ListTasksResponse] = _rpc(
    "viewer",
    f"{T}:list_tasks",
    "Recent tasks, or scheduled ones.",
)
CancelTask: Rpc[tasks.CancelTaskRequest, tasks.TaskResponse] = _rpc(
    "operator",
    "agen.hub.rpc.trees:cancel_task",
    "Cancel a task (tree: its whole tree); a running one stops, or with mode graceful gets a last turn first.",
    call_token=True,
)
PauseTask: Rpc[tasks.PauseTaskRequest, tasks.TaskResponse] = _rpc(
    "operator",
    "agen.hub.rpc.trees:pause_task",
    "Hold a task (tree: its whole tree) until resumed (or until a time).",
)
ResumeTask: Rpc[tasks.ResumeTaskRequest, tasks.TaskResponse] = _rpc(
    "operator",
    "agen.hub.rpc.trees:resume_task",
    "End a hold started by PauseTask (tree: on its whole tree).",
    starts_work=True,
)
GetTaskTree: Rpc[tasks.GetTaskTreeRequest, tasks.GetTaskTreeResponse] = _rpc(
    "viewer",
    "agen.hub.rpc.trees:get_task_tree",
    "Every task of the tree a task belongs to, with state, duration and cost.",
)
ListApprovals: Rpc[approvals.ListApprovalsRequest, approvals.ListApprovalsResponse] = _rpc(
    "viewer",
    f"{A}:list_approvals",
    "Pending (or all) approvals.",
)
GetApproval: Rpc[approvals.GetApprovalRequest, approvals.ApprovalResponse] = _rpc(
    "viewer",
    f"{A}:get_approval",
    "One approval, pending or decided, with its tool call's whole arguments.",
)
DecideApproval: Rpc[approvals.DecideApprovalRequest, approvals.ApprovalResponse] = _rpc(
    "approver",
    f"{A}:decide_approval",
    "Approve or deny a pending approval.",
    person_only=True,
)
CreateToken: Rpc[tokens.CreateTokenRequest, tokens.CreateTokenResponse] = _rpc(
    "admin",
    f"{K}:create_token",
    "Create an API token (its secret is shown once).",
)
ListTokens: Rpc[tokens.ListTokensRequest, tokens.ListTokensResponse] = _rpc(
    "admin",
    f"{K}:list_tokens",
    "API tokens: id, name, scopes, namespaces, expiry, revocation; never their secrets.",
)
RevokeToken: Rpc[tokens.RevokeTokenRequest, common.Ok] = _rpc(
    "admin",
    f"{K}:revoke_token",
    "Revoke an API token: every Hub refuses it from its next request.",
)
WhoAmI: Rpc[common.Empty, tokens.WhoAmIResponse] = _rpc(
    "any",
    f"{K}:who_am_i",
    "The caller's identity and scopes.",
    call_token=True,
)
ResolveAgent: Rpc[agents.ResolveAgentRequest, agents.ResolveAgentResponse] = _rpc(
    "viewer",
    "agen.hub.rpc.agents:resolve_agent",
    "A deployment's A2A endpoints and agent card facts (name, description, skills, paused).",
    call_token=True,
)
Shutdown: Rpc[common.Empty, common.Ok] = _rpc(
    "admin",
    f"{K}:shutdown",
    "Drain and stop the local `agen up`.",
    every_namespace=True,
)
RotateTokenKey: Rpc[tokens.RotateTokenKeyRequest, tokens.RotateTokenKeyResponse] = _rpc(
    "admin",
    f"{K}:rotate_token_key",
    "Add a call-token key: published at once, signing after a 5-minute grace; retires the previous one.",
    every_namespace=True,
)

TR, PH, EV_LOG = "agen.hub.rpc.triggers", "agen.hub.rpc.providers", "agen.hub.rpc.events"
ListTriggerEvents: Rpc[signals.ListTriggerEventsRequest, signals.ListTriggerEventsResponse] = _rpc(
    "viewer",
    f"{TR}:list_trigger_events",
    "A deployment's triggers and their fired/missed/skipped/rejected events.",
)
CreateWebhookSecret: Rpc[
    signals.CreateWebhookSecretRequest, signals.CreateWebhookSecretResponse
] = _rpc(
    "operator",
    f"{TR}:create_webhook_secret",
    "Create or rotate a webhook trigger's secret (shown once; only a hash is kept).",
)
ListProviderHolds: Rpc[signals.ListProviderHoldsRequest, signals.ListProviderHoldsResponse] = _rpc(
    "viewer",
    f"{PH}:list_provider_holds",
    "Provider accounts held after an account error.",
)
ResumeProvider: Rpc[signals.ResumeProviderRequest, signals.ResumeProviderResponse] = _rpc(
    "admin",
    f"{PH}:resume_provider",
    "End a provider hold at once.",
)
ListEvents: Rpc[signals.ListEventsRequest, signals.ListEventsResponse] = _rpc(
    "viewer",
    f"{EV_LOG}:list_events_rpc",
    "The event log after a cursor, filtered; wait_seconds waits for the first match.",
)
SetNotifyTarget: Rpc[signals.SetNotifyTargetRequest, signals.NotifyTargetResponse] = _rpc(
    "admin",
    f"{EV_LOG}:set_notify_target",
    "Create or replace a notification target.",
)
ListNotifyTargets: Rpc[signals.ListNotifyTargetsRequest, signals.ListNotifyTargetsResponse] = _rpc(
    "viewer",
    f"{EV_LOG}:list_notify_targets",
    "Notification targets with their delivery state.",
)
DeleteNotifyTarget: Rpc[signals.NotifyTargetRef, common.Ok] = _rpc(
    "admin",
    f"{EV_LOG}:delete_notify_target",
    "Remove a notification target.",
)
DryRunTask: Rpc[tasks.SubmitTaskRequest, signals.DryRunTaskResponse] = _rpc(
    "operator",
    f"{T}:dry_run_task",
    "Run every admission check for a task without queuing it.",
)

# --- observe (issue 7: see what agents do): runs, transcripts, traces, task queries, activity, metrics ---
OB = "agen.hub.rpc.runs"
ListRuns: Rpc[observe.ListRunsRequest, observe.ListRunsResponse] = _rpc(
    "viewer",
    f"{OB}:list_runs",
    "Recent runs (roots: one per trace, with the usage of the runs they delegated to).",
)
GetTranscript: Rpc[observe.GetTranscriptRequest, observe.GetTranscriptResponse] = _rpc(
    "viewer",
    f"{OB}:get_transcript",
    "What a run (or a task's run) sent to the model and got back.",
)
GetTrace: Rpc[observe.GetTraceRequest, observe.GetTraceResponse] = _rpc(
    "viewer",
    f"{OB}:get_trace",
    "Every span of a trace (by task, run or trace id), across agents.",
)
QueryTask: Rpc[observe.QueryTaskRequest, observe.QueryTaskResponse] = _rpc(
    "viewer",
    f"{OB}:query_task",
    "A task's progress, what its run does now and its outcome, without waiting.",
)
ResolveId: Rpc[ids.ResolveIdRequest, ids.ResolveIdResponse] = _rpc(
    "viewer",
    "agen.hub.rpc.ids:resolve_id",
    "The whole task, run or approval id for a unique prefix or suffix (the short ids the TUI shows).",
)
GetActivity: Rpc[observe.GetActivityRequest, observe.GetActivityResponse] = _rpc(
    "viewer",
    "agen.hub.rpc.activity:get_activity",
    "Unfinished runs with what they do now, queues and warnings.",
)
GetMetrics: Rpc[observe.GetMetricsRequest, observe.GetMetricsResponse] = _rpc(
    "viewer",
    "agen.hub.rpc.metrics:get_metrics",
    "Per served model calls and latency, entries, call edges, throughput.",
)
# --- end observe ---

# --- memory and artifacts (issue 20): memory blocks with versions, artifacts agents saved ---
MM = "agen.hub.rpc.memory"
ListMemory: Rpc[memory.ListMemoryRequest, memory.ListMemoryResponse] = _rpc(
    "viewer",
    f"{MM}:list_memory",
    "Memory blocks of a namespace, with their versions.",
)
GetMemory: Rpc[memory.GetMemoryRequest, memory.MemoryBlockResponse] = _rpc(
    "viewer",
    f"{MM}:get_memory",
    "A memory block's value (the current version, or an earlier one).",
)
SetMemory: Rpc[memory.SetMemoryRequest, memory.MemoryBlockResponse] = _rpc(
    "operator",
    f"{MM}:set_memory",
    "Replace a memory block's value (creating it); expected_version makes it a compare-and-set.",
)
MemoryHistory: Rpc[memory.MemoryHistoryRequest, memory.MemoryHistoryResponse] = _rpc(
    "viewer",
    f"{MM}:memory_history",
    "Every version of a memory block: value, author (run or person), time.",
)
RollbackMemory: Rpc[memory.RollbackMemoryRequest, memory.MemoryBlockResponse] = _rpc(
    "operator",
    f"{MM}:rollback_memory",
    "Write a new version of a memory block equal to an earlier one.",
)
ListArtifacts: Rpc[memory.ListArtifactsRequest, memory.ListArtifactsResponse] = _rpc(
    "viewer",
    f"{MM}:list_artifacts",
    "Artifacts of a namespace, or of one task or run.",
)
GetArtifact: Rpc[memory.GetArtifactRequest, memory.GetArtifactResponse] = _rpc(
    "viewer",
    f"{MM}:get_artifact",
    "An artifact's content, a page at a time.",
)
# --- end memory and artifacts ---

# --- feedback (issue 20): scores on how tasks went ---
FB = "agen.hub.rpc.feedback"
RecordFeedback: Rpc[feedback.RecordFeedbackRequest, feedback.RecordFeedbackResponse] = _rpc(
    "operator",
    f"{FB}:record_feedback",
    "Record a score (-1.0..1.0), note and labels on a task's run.",
)
ListFeedback: Rpc[feedback.ListFeedbackRequest, feedback.ListFeedbackResponse] = _rpc(
    "viewer",
    f"{FB}:list_feedback",
    "Feedback, newest first, with the run, task and digest it rates.",
)
# --- end feedback ---

# --- replay and eval (issue 20) ---
EV = "agen.hub.rpc.evals"
GetReplaySource: Rpc[evals.GetReplaySourceRequest, evals.GetReplaySourceResponse] = _rpc(
    "operator",
    f"{EV}:get_replay_source",
    "A run's messages, cassette and its deployment's current bundle, for `agen replay`.",
)
RecordEvalRuns: Rpc[evals.RecordEvalRunsRequest, evals.RecordEvalRunsResponse] = _rpc(
    "operator",
    f"{EV}:record_eval_runs",
    "Keep the results of one `agen eval` of a bundle digest.",
)
ListEvalRuns: Rpc[evals.ListEvalRunsRequest, evals.ListEvalRunsResponse] = _rpc(
    "viewer",
    f"{EV}:list_eval_runs",
    "A bundle's recorded evals, newest first, per scenario.",
)
GetEvalRuns: Rpc[evals.GetEvalRunsRequest, evals.GetEvalRunsResponse] = _rpc(
    "viewer",
    f"{EV}:get_eval_runs",
    "One recorded eval (by id, or a digest's newest), every run with its score and checks.",
)
# --- end replay and eval ---

# --- the Nest-facing calls (DESIGN.md §1): a Nest's Manager and instances use only these (and WhoAmI) ---
N, E = "agen.hub.rpc.nests", "agen.hub.rpc.enrolment"
RegisterNest: Rpc[nests.RegisterNestRequest, nests.RegisterNestResponse] = _rpc(
    "nest",
    f"{N}:register_nest",
    "Enrol (or re-enrol by name) a Nest; returns its id.",
)
ReportNest: Rpc[nests.ReportNestRequest, nests.ReportNestResponse] = _rpc(
    "nest",
    f"{N}:report_nest",
    "A Nest's heartbeat with its instances; returns its assignments.",
)
GetDefinitionFiles: Rpc[nests.GetDefinitionFilesRequest, nests.GetDefinitionFilesResponse] = _rpc(
    "nest",
    f"{N}:get_definition_files_rpc",
    "A definition's bundle files (base64), checked.",
)
LeaseTasks: Rpc[nests.LeaseTasksRequest, nests.LeaseTasksResponse] = _rpc(
    "nest",
    f"{N}:lease_tasks",
    "Lease queued tasks of a deployment for one instance (none while the Hub drains).",
)
MarkRunning: Rpc[nests.MarkRunningRequest, common.Ok] = _rpc(
    "nest",
    f"{N}:mark_running",
    "A leased task started (leased -> running).",
)
ExtendLeases: Rpc[nests.ExtendLeasesRequest, nests.ExtendLeasesResponse] = _rpc(
    "nest",
    f"{N}:extend_leases",
    "Extend many leases at once; returns the tasks whose lease was lost.",
)
CompleteTask: Rpc[nests.CompleteTaskRequest, common.Ok] = _rpc(
    "nest",
    f"{N}:complete_task",
    "End a leased task with its outcome (fenced by its lease id).",
)
ReleaseTask: Rpc[nests.ReleaseTaskRequest, common.Ok] = _rpc(
    "nest",
    f"{N}:release_task",
    "Give a leased task back to the queue (fenced by its lease id).",
)
SuspendTask: Rpc[nests.SuspendTaskRequest, common.Ok] = _rpc(
    "nest",
    f"{N}:suspend_task",
    "A leased task's run suspended until something arrives (fenced by its lease id).",
)
ReportProgress: Rpc[nests.ReportProgressRequest, nests.ReportProgressResponse] = _rpc(
    "nest",
    f"{N}:report_progress",
    "A running task's latest progress (report_progress tool).",
)
PublishLive: Rpc[nests.PublishLiveRequest, nests.PublishLiveResponse] = _rpc(
    "nest",
    "agen.hub.rpc.live:publish_live",
    "A batch of live events (deltas, model and tool calls) of this Nest's runs, published on the "
    "Hub's event stream and never stored; events of tasks it does not run are refused.",
)
WaitForWork: Rpc[nests.WaitForWorkRequest, nests.WaitForWorkResponse] = _rpc(
    "nest",
    f"{N}:wait_for_work",
    "Long-poll until tasks may have become leasable since a work generation.",
)
GetTokenKeys: Rpc[common.Empty, nests.GetTokenKeysResponse] = _rpc(
    "nest",
    f"{E}:get_token_keys",
    "The Hub's public keys that agents' call tokens verify against (a Gateway checks callers offline).",
)
RenewNestCertificate: Rpc[nests.RenewNestCertificateRequest, nests.RenewNestCertificateResponse] = (
    _rpc(
        "nest",
        f"{E}:renew_nest_certificate",
        "A TLS Hub signs a fresh key's CSR for the calling Nest, over its current mTLS connection; the "
        "current certificate works until the new one is first used.",
    )
)
CreateJoinToken: Rpc[nests.CreateJoinTokenRequest, nests.CreateJoinTokenResponse] = _rpc(
    "admin",
    f"{E}:create_join_token",
    "A single-use token that enrols one Nest (`agen nest run --join-token`), with labels it gets.",
    every_namespace=True,
)
EnrolNest: Rpc[nests.EnrolNestRequest, nests.EnrolNestResponse] = _rpc(
    "join",
    f"{E}:enrol_nest",
    "Use up a join token: the Nest is registered and receives its own credential (scope nest) and, "
    "from a TLS Hub, its client certificate signed from its CSR in the same transaction.",
)
ListNests: Rpc[nests.ListNestsRequest, nests.ListNestsResponse] = _rpc(
    "viewer",
    f"{E}:list_nests",
    "Every Nest: labels, capacity, live instances, last heartbeat, state.",
)
RevokeNest: Rpc[nests.RevokeNestRequest, common.Ok] = _rpc(
    "admin",
    f"{E}:revoke_nest",
    "End a Nest's credential, certificates, assignments and leases for good; its tasks run elsewhere.",
    every_namespace=True,
)
# Platform secrets (agen.hub.rpc.secrets): values go in through admin calls and out only to a Nest.
S = "agen.hub.rpc.secrets"
SetSecret: Rpc[secrets.SetSecretRequest, secrets.SetSecretResponse] = _rpc(
    "admin",
    f"{S}:set_secret",
    "Create or replace a platform secret (sealed under the Hub's KEK) and its deployment grants.",
)
ListSecrets: Rpc[secrets.ListSecretsRequest, secrets.ListSecretsResponse] = _rpc(
    "admin",
    f"{S}:list_secrets",
    "A namespace's platform secrets: names, grants, whether sealed, updated time; never values.",
)
DeleteSecret: Rpc[secrets.DeleteSecretRequest, common.Ok] = _rpc(
    "admin",
    f"{S}:delete_secret",
    "Remove a platform secret.",
)
GetPlatformSecrets: Rpc[secrets.GetPlatformSecretsRequest, secrets.GetPlatformSecretsResponse] = (
    _rpc(
        "nest",
        f"{S}:get_platform_secrets",
        "The platform secrets a deployment assigned to this Nest declares and is granted (Nests only).",
    )
)
# Delegation: a running task's engine, through its Nest (agen.hub.rpc.children).
C = "agen.hub.rpc.children"
SubmitChildTask: Rpc[delegation.SubmitChildTaskRequest, delegation.ChildTaskResponse] = _rpc(
    "nest",
    f"{C}:submit_child_task",
    "Submit a child task of a running task (call_agent, start_agent); the call key makes it idempotent.",
)
WaitChildTask: Rpc[delegation.WaitChildTaskRequest, delegation.ChildTaskResponse] = _rpc(
    "nest",
    f"{C}:wait_child_task",
    "A child task's state once it ended or wait_seconds (at most 60) passed.",
)
CheckTurn: Rpc[delegation.CheckTurnRequest, delegation.CheckTurnResponse] = _rpc(
    "nest",
    f"{C}:check_turn",
    "Before a model call: joined children still running, their undelivered results, the tree budget.",
)
AckInbox: Rpc[delegation.AckInboxRequest, common.Ok] = _rpc(
    "nest",
    f"{C}:ack_inbox",
    "Inbox rows the run checkpointed: they are not delivered again.",
)
QueryChildTask: Rpc[delegation.ChildTaskRef, delegation.QueryChildTaskResponse] = _rpc(
    "nest",
    f"{C}:query_child_task",
    "State, progress and outcome of a descendant task (query_agent); refused for any other task.",
)
SignalChildTask: Rpc[delegation.SignalChildTaskRequest, common.Ok] = _rpc(
    "nest",
    f"{C}:signal_child_task",
    "Send a message to a descendant task's inbox (signal_agent); refused for any other task.",
)
AcquireLock: Rpc[delegation.AcquireLockRequest, delegation.AcquireLockResponse] = _rpc(
    "nest",
    f"{C}:acquire_lock",
    "Grant a named lock to a running task mid-run (acquire_lock); its fence, or none while held.",
)
ReleaseLock: Rpc[delegation.ReleaseLockRequest, delegation.ReleaseLockResponse] = _rpc(
    "nest",
    f"{C}:release_lock",
    "Drop a lock a running task acquired (release_lock).",
)
ResolveChildAgent: Rpc[
    delegation.ResolveChildAgentRequest, delegation.ResolveChildAgentResponse
] = _rpc(
    "nest",
    f"{C}:resolve_child_agent",
    "A deployment's A2A endpoints and a call token naming the running task's deployment as caller (1 h).",
)
CountA2ACall: Rpc[delegation.CountA2ACallRequest, common.Ok] = _rpc(
    "nest",
    f"{C}:count_a2a_call",
    "Count an A2A call_agent towards the run's maxFanOut and the tree's maxTotalDelegations (once per key).",
)

_ANNOTATION = re.compile(r"Rpc\[(\w+)\.(\w+), (\w+)\.(\w+)\]")


def _named(namespace: dict[str, Any]) -> dict[str, Rpc[Any, Any]]:
    """Every RPC declared above, in declaration order, named after its variable, with the models its
    annotation names (``wire_module.Model``, the text ``from __future__ import annotations`` keeps).
    Each module-level name is rebound to its named RPC, so importers see only finished ones."""
    named: dict[str, Rpc[Any, Any]] = {}
    for name, annotation in namespace["__annotations__"].items():
        if not isinstance(namespace.get(name), Rpc):
            continue
        m = _ANNOTATION.fullmatch(annotation)
        if m is None:
            raise TypeError(
                f"{name}: annotate it as Rpc[wire_module.Request, wire_module.Response]"
            )
        rpc = replace(
            namespace[name],
            name=name,
            request_ref=f"{m[1]}:{m[2]}",
            response_ref=f"{m[3]}:{m[4]}",
        )
        namespace[name] = named[name] = rpc
    return named


RPCS: dict[str, Rpc[Any, Any]] = _named(globals())
