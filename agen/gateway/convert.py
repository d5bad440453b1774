"""agen tasks as A2A shapes, and an A2A message's text and metadata as a task submission."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict

from agen.domain.attachments import FileIn
from agen.errors import InvalidError
from agen.otel.ids import received_traceparent
from agen.wire.tasks import TERMINAL_STATES
from agen.wire.tasks import Task as AgenTask

# agen's outcome status -> A2A state (seed 000 §2 "Outcome": needs_input/rejected have their own).
_OUTCOME_STATE = {
    "done": TaskState.TASK_STATE_COMPLETED,
    "partial": TaskState.TASK_STATE_COMPLETED,
    "needs_input": TaskState.TASK_STATE_INPUT_REQUIRED,
    "rejected": TaskState.TASK_STATE_REJECTED,
    "failed": TaskState.TASK_STATE_FAILED,
}
_TASK_STATE = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "leased": TaskState.TASK_STATE_WORKING,
    "running": TaskState.TASK_STATE_WORKING,
    "waiting": TaskState.TASK_STATE_WORKING,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
    "expired": TaskState.TASK_STATE_FAILED,
}


def conversation_key(caller_id: str, context_id: str) -> str:
    """Messages of one context from one caller continue one conversation (seed 000 §6)."""
    return f"a2a:{caller_id}:{context_id}"


def idempotency_key(caller_id: str, message_id: str) -> str:
    """A repeated message id from the same caller is the same task; another caller's is not."""
    return f"a2a:{caller_id}:msg:{message_id}"


def context_of(task: AgenTask, caller_id: str) -> str | None:
    """The contextId of a task this caller started over A2A; None when it is not one (not theirs)."""
    prefix = f"a2a:{caller_id}:"
    key = task.conversation_key or ""
    return key[len(prefix) :] if key.startswith(prefix) else None


def new_context_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Submission:
    """What one A2A message asks for, read from its parts and metadata."""

    text: str
    context_id: str
    message_id: str
    files: list[FileIn] = field(default_factory=list)  # raw and data parts, in order
    traceparent: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    model_tier: str | None = None
    parent_run_id: str | None = None  # claimed lineage: honoured only for an agent's call token


def read_message(message: Message, metadata: dict[str, Any]) -> Submission:
    """The text of the message's text parts, its raw (file bytes) and data (JSON) parts as files;
    lineage from the message's and the request's metadata.

    Of the lineage that would attach the run to another run's tree (agen.depth, agen.parent_run_id,
    agen.root_run_id) only the parent run is read: the Hub checks it is a run of the calling
    agent's deployment and derives root and depth from it (seed 000 §10). The handler passes it on
    only for an agent's call token; anyone else's call starts a new tree.
    """
    texts = [p.text for p in message.parts if p.WhichOneof("content") == "text"]
    files = [_file(i, p) for i, p in enumerate(message.parts) if p.WhichOneof("content") in FILES]
    others = [
        p.WhichOneof("content") for p in message.parts if p.WhichOneof("content") not in KNOWN
    ]
    if others:
        raise InvalidError(
            f"not supported yet: A2A {', '.join(sorted(set(str(o) for o in others)))} parts; "
            "send the file's bytes as a raw part, or its text"
        )
    text = "\n".join(texts).strip()
    if not text and not files:
        raise InvalidError("the A2A message has no text; send at least one text part")
    meta = {**metadata, **(MessageToDict(message.metadata) if message.HasField("metadata") else {})}
    parent = meta.get("agen.parent_run_id")
    if parent not in (None, "") and not isinstance(parent, str):
        raise InvalidError("agen.parent_run_id in A2A metadata must be a run id (a string)")
    labels = meta.get("agen.labels") or {}
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise InvalidError(
            'agen.labels in A2A metadata must be an object of strings, e.g. {"team": "a"}'
        )
    traceparent = meta.get("traceparent")
    tier = meta.get("agen.model_tier")
    return Submission(
        text=text,
        files=files,
        context_id=message.context_id or new_context_id(),
        message_id=message.message_id or str(uuid.uuid4()),
        traceparent=received_traceparent(traceparent),  # an invalid one: a new trace
        labels=dict(labels),
        model_tier=str(tier) if tier else None,
        parent_run_id=parent or None,
    )


FILES = ("raw", "data")
KNOWN = ("text", *FILES)


def _file(i: int, part: Part) -> FileIn:
    """A raw part (a file's bytes) or a data part (JSON) as a file given with the task."""
    if part.WhichOneof("content") == "raw":
        return FileIn(
            name=part.filename or f"file-{i + 1}",
            data=base64.b64encode(part.raw).decode(),
            media_type=part.media_type or None,
        )
    data = json.dumps(MessageToDict(part.data), ensure_ascii=False, indent=1)
    return FileIn(
        name=part.filename or f"data-{i + 1}.json",
        data=base64.b64encode(data.encode()).decode(),
        media_type="application/json",
    )


def answer_of(task: AgenTask) -> str:
    """The text an A2A caller gets back: the outcome's summary, else its error."""
    o = task.outcome or {}
    return str(o.get("summary") or o.get("error") or task.error or "")


def state_of(task: AgenTask) -> Any:  # a TaskState value
    if task.state == "succeeded":
        status = str((task.outcome or {}).get("status") or "done")
        return _OUTCOME_STATE.get(status, TaskState.TASK_STATE_COMPLETED)
    return _TASK_STATE.get(task.state, TaskState.TASK_STATE_WORKING)


def agent_message(task: AgenTask, context_id: str, text: str, kind: str = "answer") -> Message:
    return Message(
        message_id=f"{task.id}.{kind}",
        context_id=context_id,
        task_id=task.id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def live_artifact(task_id: str, text: str) -> Artifact:
    """A piece of the answer as it streams, in the artifact ``answer_artifact`` ends with."""
    return Artifact(artifact_id=f"{task_id}.answer", name="answer", parts=[Part(text=text)])


def answer_artifact(task: AgenTask) -> Artifact | None:
    text = answer_of(task)
    if task.state not in TERMINAL_STATES or not text:
        return None
    artifact = Artifact(artifact_id=f"{task.id}.answer", name="answer", parts=[Part(text=text)])
    data = (task.outcome or {}).get("data")
    if isinstance(data, dict):  # structured output (finish's data) as a data part
        part = Part()
        part.data.struct_value.update(data)
        artifact.parts.append(part)
    return artifact


def status_of(task: AgenTask, context_id: str) -> TaskStatus:
    status = TaskStatus(state=state_of(task))
    text = answer_of(task) if task.state in TERMINAL_STATES else ""
    if text:
        status.message.CopyFrom(agent_message(task, context_id, text))
    return status


def to_a2a(task: AgenTask, context_id: str) -> Task:
    """The agen task as an A2A Task: its id is the agen task id, its answer an artifact."""
    out = Task(id=task.id, context_id=context_id, status=status_of(task, context_id))
    artifact = answer_artifact(task)
    if artifact is not None:
        out.artifacts.append(artifact)
    outcome = task.outcome or {}
    meta: dict[str, Any] = {"agen.task_state": task.state}
    if outcome:
        meta["agen.outcome"] = {
            k: outcome[k] for k in ("status", "reason") if outcome.get(k) is not None
        }
    if task.run_id:
        meta["agen.run_id"] = task.run_id
    out.metadata.update(meta)
    return out
