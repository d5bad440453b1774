"""Transaction functions that write run data: open/claim a run, checkpoint a step, finish.

Every write that changes a run checks its epoch in the same statement that bumps the
run's counters (``UPDATE runs ... WHERE id = ? AND epoch = ?``): a previous owner that is
still alive after another host claimed the run gets ``FencedError`` at its next write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agen.domain import RunRow, RunStatus
from agen.errors import ConflictError, FencedError
from agen.runner.context import MessageRow
from agen.runner.types import RunRequest
from agen.store.base import Tx, dumps, new_ulid
from agen.store.pg_locks import lock_keys
from agen.store.records import columns, read

MESSAGE_SQL = (
    "INSERT INTO messages (id, conversation_id, run_id, seq, turn, role, content, tool_calls, tool_call_id,"
    " name, is_error, model, usage, raw, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
SPAN_SQL = (
    "INSERT INTO spans (id, trace_id, parent_id, run_id, task_id, namespace, deployment, name, status, attrs,"
    " error, started_ms, ended_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
USAGE_SQL = (
    "INSERT INTO usage (id, run_id, task_id, namespace, deployment, provider, model, input_tokens, output_tokens,"
    " cached_input_tokens, cost_usd, day, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


@dataclass
class Opened:
    run: RunRow
    resumed: bool = False
    finished: bool = False
    # The conversation's stored messages when this call created it (exactly the input message), so the
    # Runner need not read them back; None when there may be history to read (resumed or keyed conversation).
    messages: list[MessageRow] | None = None
    held: bool = (
        False  # the run's task is paused (PauseTask): the run suspends before its first model call
    )
    inbox: bool = True  # the task may have inbox rows to drain (False: known to have none)


@dataclass
class Checkpoint:
    """One step's writes: applied together with the epoch check, or not at all."""

    run_id: str
    epoch: int
    conversation_id: str
    turns: int
    next_seq: int
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    spans: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    task_id: str | None = None
    keyed: bool = (
        True  # the conversation has a key: later runs continue it (next_seq is kept up to date)
    )
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None
    # Set on the final write of a run.
    status: str | None = None
    # the JSON runs.outcome holds: the run's Outcome as dumped (and redacted) once by the Runner
    outcome: dict[str, Any] | None = None
    span_id: str | None = None
    span_status: str | None = None
    event: tuple[str, str, str | None, dict[str, Any]] | None = (
        None  # namespace, deployment, task_id, data
    )


def check_epoch(tx: Tx, run_id: str, epoch: int) -> None:
    """Raise FencedError unless this writer still owns the run at ``epoch``."""
    n = tx.execute(
        "UPDATE runs SET updated_ms = ? WHERE id = ? AND epoch = ?", (tx.now_ms, run_id, epoch)
    )
    if n == 0:
        _fenced(tx, run_id, epoch)


def _fenced(tx: Tx, run_id: str, epoch: int) -> None:
    current = tx.scalar("SELECT epoch FROM runs WHERE id = ?", (run_id,))
    raise FencedError(
        f"run {run_id} was claimed by another owner (epoch {current}, this writer had {epoch}); "
        "this writer stops: the new owner continues the run",
        run_id=run_id,
        epoch=epoch,
        current_epoch=current,
    )


class _Hold(NamedTuple):
    held: bool
    held_until_ms: int | None


def task_held(tx: Tx, task_id: str | None) -> bool:
    """Whether the run's task is paused right now, read in the run's own transaction: the Runner checks it
    before each model call without another round trip to the Store."""
    if task_id is None:
        return False
    row = tx.row(_Hold, f"SELECT {columns(_Hold)} FROM tasks WHERE id = ?", (task_id,))
    return bool(row and row.held and (row.held_until_ms is None or row.held_until_ms > tx.now_ms))


# Whether the run's task is paused at the transaction's time (parameters: now, task id), as a column of
# the statement that writes the run: task_held without a statement of its own.
_HELD_SQL = (
    "(SELECT CASE WHEN held <> 0 AND (held_until_ms IS NULL OR held_until_ms > ?) THEN 1 ELSE 0 END"
    " FROM tasks WHERE id = ?) AS task_held"
)
# The inbox rows a running run drains before each model call (agen/runner/inbox.py).
INBOX_KINDS = ("signal", "cancel", "steer")
# Whether the task has such rows unclaimed (parameter: task id), a column of the same statement: the
# Runner reads its inbox only when this says there is something to read.
_INBOX_SQL = (
    "EXISTS (SELECT 1 FROM run_inbox i WHERE i.task_id = ? AND i.consumed_ms IS NULL"
    f" AND i.kind IN ({', '.join(repr(k) for k in INBOX_KINDS)})) AS inbox_pending"
)


class _TaskFlags(NamedTuple):
    """The two columns _HELD_SQL and _INBOX_SQL add to the statement that writes the run (NULL, no
    task: not held)."""

    task_held: bool
    inbox_pending: bool


# Whole statements as module constants: text built per call is a new string whose hash sqlite3's
# statement cache computes again (and compares in full) on every execution.
_STEP_SQL = (
    "UPDATE runs SET turns = ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
    " cached_tokens = cached_tokens + ?, cost_usd = cost_usd + ?, model = COALESCE(?, model), updated_ms = ?"
    " WHERE id = ? AND epoch = ? RETURNING " + _HELD_SQL + ", " + _INBOX_SQL
)
_OPEN_RUN_SQL = (
    "INSERT INTO runs (id, namespace, deployment, task_id, session_id, conversation_id, parent_run_id,"
    " root_run_id, trace_id, span_id, status, input, owner, epoch, labels, trust, source, requested_by, model,"
    " started_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,'running',?,?,1,?,?,?,?,?,?,?)"
    " ON CONFLICT (task_id) DO NOTHING RETURNING *, " + _HELD_SQL + ", " + _INBOX_SQL
)


def write_checkpoint(tx: Tx, cp: Checkpoint) -> tuple[bool, bool]:
    """Apply one step's writes; returns whether the run's task is now held (see ``task_held``) and
    whether its inbox has rows to drain, both read by the statement that bumps the run (no SELECT)."""
    now = tx.now_ms
    held = inbox = False
    if cp.status is None:  # a step of a run that goes on
        flags = tx.row(
            _TaskFlags,
            _STEP_SQL,
            (
                cp.turns,
                cp.input_tokens,
                cp.output_tokens,
                cp.cached_tokens,
                cp.cost_usd,
                cp.model,
                now,
                cp.run_id,
                cp.epoch,
                now,
                cp.task_id,
                cp.task_id,
            ),
        )
        n = 0 if flags is None else 1
        held = flags is not None and flags.task_held
        inbox = flags is not None and flags.inbox_pending
    else:
        n = tx.execute(
            "UPDATE runs SET turns = ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
            " cached_tokens = cached_tokens + ?, cost_usd = cost_usd + ?, model = COALESCE(?, model), updated_ms = ?,"
            " status = ?, outcome = ?, finished_ms = ? WHERE id = ? AND epoch = ?",
            (
                cp.turns,
                cp.input_tokens,
                cp.output_tokens,
                cp.cached_tokens,
                cp.cost_usd,
                cp.model,
                now,
                cp.status,
                dumps(cp.outcome),
                now,
                cp.run_id,
                cp.epoch,
            ),
        )
    if n == 0:
        _fenced(tx, cp.run_id, cp.epoch)
    if cp.messages:
        tx.executemany(MESSAGE_SQL, cp.messages)
    if (
        cp.messages and cp.keyed
    ):  # a keyless conversation has this one run: nobody reads its next_seq
        tx.execute(
            "UPDATE conversations SET next_seq = ?, updated_ms = ? WHERE id = ?",
            (cp.next_seq, now, cp.conversation_id),
        )
    if cp.spans:
        tx.executemany(SPAN_SQL, cp.spans)
    if cp.usage:
        tx.executemany(USAGE_SQL, cp.usage)
    if cp.span_id and cp.span_status:
        tx.execute(
            "UPDATE spans SET status = ?, ended_ms = ?, attrs = json_set(attrs, '$.\"agen.outcome\"', ?)"
            " WHERE id = ?",
            (cp.span_status, now, (cp.outcome or {}).get("status"), cp.span_id),
        )
    if cp.event is not None:
        namespace, deployment, task_id, data = cp.event
        tx.event(
            namespace,
            "run.finished",
            deployment=deployment or None,
            task_id=task_id,
            run_id=cp.run_id,
            data=data,
            severity="info" if cp.status == "succeeded" else "warning",
        )
    return held, inbox


def close_suspended_span(tx: Tx, run_id: str, epoch: int, span_id: str, why: str) -> None:
    """A run that suspends (an approval, a child, a hold) ends its span there, ``ok`` with
    ``agen.suspended`` saying what it waits for: the run that resumes it opens a new one under it,
    and only a run cut off by a crash reads ``interrupted``."""
    tx.execute(
        "UPDATE spans SET status = 'ok', ended_ms = ?, attrs = json_set(attrs, '$.\"agen.suspended\"', ?)"
        " WHERE id = ? AND status = 'unfinished' AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND epoch = ?)",
        (tx.now_ms, why, span_id, run_id, epoch),
    )


class _RunPlace(NamedTuple):
    namespace: str
    deployment: str
    task_id: str | None


def record_stopped_spans(tx: Tx, run_id: str, spans: list[tuple[Any, ...]]) -> None:
    """A run the Hub already ended (its task was cancelled: ``end_run`` closed its spans and fenced
    it off) adds what it still held: the spans of the calls it was in when it was stopped, with
    status cancelled. Only to a run that is finished (a run another owner took over is theirs), and
    with a ``run.spans`` event naming them, so the OTLP exporter sends them after the run's own."""
    run = tx.row(_RunPlace, f"SELECT {columns(_RunPlace)} FROM runs WHERE id = ?", (run_id,))
    if run is None or not spans:
        return
    if tx.scalar("SELECT finished_ms FROM runs WHERE id = ?", (run_id,)) is None:
        return
    tx.executemany(SPAN_SQL, spans)
    tx.event(
        run.namespace,
        "run.spans",
        deployment=run.deployment or None,
        task_id=run.task_id,
        run_id=run_id,
        data={"spans": [s[0] for s in spans]},
    )


def name_conversation(tx: Tx, conversation_id: str, key: str) -> None:
    """Give a keyless conversation a key (and its session), so a later task with that key continues
    it: a detached child's reply (``async:<conversation>``). A conversation with a key keeps it."""
    tx.execute(
        "UPDATE conversations SET key = ? WHERE id = ? AND key IS NULL", (key, conversation_id)
    )
    tx.execute(
        "UPDATE sessions SET key = ? WHERE key IS NULL AND id ="
        " (SELECT session_id FROM conversations WHERE id = ?)",
        (key, conversation_id),
    )


_SESSION_SQL = "INSERT INTO sessions (id, namespace, deployment, key, created_ms, updated_ms) VALUES (?,?,?,?,?,?)"
_CONVERSATION_SQL = (
    "INSERT INTO conversations (id, session_id, namespace, deployment, key, next_seq, created_ms, updated_ms)"
    " VALUES (?,?,?,?,?,2,?,?)"
)
# A new session and its conversation in one statement (a data-modifying CTE, which SQLite lacks; the
# conversation's foreign key is checked at the statement's end, when the session row is there).
_NEW_CONVERSATION_PG = f"WITH s AS ({_SESSION_SQL}) {_CONVERSATION_SQL}"


class _Conversation(NamedTuple):
    id: str
    session_id: str
    next_seq: int


def _conversation(tx: Tx, req: RunRequest) -> tuple[str, str, int, bool]:
    """(session id, conversation id, next seq, created) for the request, creating them when new; a new
    conversation is stored with its first message's seq already taken."""
    now = tx.now_ms
    if req.conversation_key:
        # one run of a conversation at a time decides whether it is busy or new (agen.store.pg_locks)
        lock_keys(tx, f"run-conversation:{req.namespace}:{req.deployment}:{req.conversation_key}")
        # The next seq from the messages themselves (UNIQUE (conversation_id, seq) makes it one index
        # probe): a conversation named after it began (name_conversation) skipped next_seq while keyless.
        row = tx.row(
            _Conversation,
            "SELECT c.id, c.session_id, (SELECT COALESCE(MAX(m.seq), 0) + 1 FROM messages m"
            " WHERE m.conversation_id = c.id) AS next_seq"
            " FROM conversations c WHERE c.namespace = ? AND c.deployment = ? AND c.key = ?",
            (req.namespace, req.deployment, req.conversation_key),
        )
        if row is not None:
            busy = tx.scalar(
                "SELECT id FROM runs WHERE conversation_id = ? AND finished_ms IS NULL",
                (row.id,),
            )
            if busy:
                raise ConflictError(
                    f"conversation already has an unfinished run ({busy}); wait for it to end or cancel it",
                    conversation_key=req.conversation_key,
                    run_id=busy,
                )
            return row.session_id, row.id, row.next_seq, False
    session_id, conversation_id = new_ulid(), new_ulid()
    session = (session_id, req.namespace, req.deployment, req.conversation_key, now, now)
    conversation = (
        conversation_id,
        session_id,
        req.namespace,
        req.deployment,
        req.conversation_key,
        now,
        now,
    )
    if tx.dialect == "postgres":  # both rows in one statement: a round trip fewer on every run
        tx.execute(_NEW_CONVERSATION_PG, (*session, *conversation))
    else:
        tx.execute(_SESSION_SQL, session)
        tx.execute(_CONVERSATION_SQL, conversation)
    return session_id, conversation_id, 1, True


def open_run(tx: Tx, req: RunRequest, owner: str, model: str, digest: str | None) -> Opened:
    """Create the run (or claim the task's existing one) with its top-level span and input message."""
    now = tx.now_ms
    if (
        req.task_id and req.conversation_key
    ):  # a keyed conversation would refuse the task's own run as busy
        existing = _existing_run(tx, req, owner)
        if existing is not None:
            return existing
    session_id, conversation_id, seq, created = _conversation(tx, req)
    run_id, span_id = new_ulid(), new_ulid()
    trace_id, parent_span = req.trace_id or new_ulid(), None
    if req.traceparent:  # the caller's trace: this run's span is a child of the caller's span
        from agen.otel.ids import from_traceparent

        trace_id, parent_span = from_traceparent(req.traceparent)
    # RETURNING: the stored row without reading it back, and whether its task is paused right now (see
    # task_held) in the same statement. ON CONFLICT: the task's run exists already (a new lease of a task
    # whose host died), which is rare enough to find out this way rather than by a SELECT before every run.
    # The one row holds two types (the run's columns and _TaskFlags), so it is read as a mapping and
    # then typed twice: one statement, not a SELECT more per run.
    found = tx.one(
        _OPEN_RUN_SQL,
        (
            run_id,
            req.namespace,
            req.deployment,
            req.task_id,
            session_id,
            conversation_id,
            req.parent_run_id,
            req.root_run_id or run_id,
            trace_id,
            span_id,
            req.input,
            owner,
            dumps(req.labels),
            req.trust,
            req.source,
            req.requested_by,
            model,
            now,
            now,
            now,
            req.task_id,
            req.task_id,
        ),
    )
    if found is None:  # the task has its run already: drop the new conversation, claim that run
        if created:
            tx.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            tx.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        existing = _existing_run(tx, req, owner)
        assert existing is not None
        return existing
    flags = read(_TaskFlags, found)
    attrs = {
        "agen.attempt": req.attempt,
        "agen.epoch": 1,
        "agen.owner": owner,
        "agen.definition.digest": digest,
        "gen_ai.conversation.id": conversation_id,
    }
    tx.execute(
        SPAN_SQL,
        (
            span_id,
            trace_id,
            parent_span,
            run_id,
            req.task_id,
            req.namespace,
            req.deployment,
            "agen.run",
            "unfinished",
            dumps(attrs),
            None,
            now,
            None,
        ),
    )
    tx.execute(
        MESSAGE_SQL,
        (
            new_ulid(),
            conversation_id,
            run_id,
            seq,
            0,
            "user",
            req.input,
            None,
            None,
            None,
            0,
            None,
            None,
            None,
            now,
        ),
    )
    files = dumps([a.model_dump() for a in req.attachments]) if req.attachments else None
    if files is not None:  # the files given with the input go with its message (0029)
        tx.execute(
            "UPDATE messages SET attachments = ? WHERE conversation_id = ? AND seq = ?",
            (files, conversation_id, seq),
        )
    first = MessageRow(seq, 0, "user", req.input, run_id, is_error=False, attachments=files)
    if not created:
        tx.execute(
            "UPDATE conversations SET next_seq = ?, updated_ms = ? WHERE id = ?",
            (seq + 1, now, conversation_id),
        )
    tx.event(
        req.namespace,
        "run.started",
        deployment=req.deployment or None,
        task_id=req.task_id,
        run_id=run_id,
        data={"conversation_id": conversation_id},
    )
    return Opened(
        read(RunRow, found),
        messages=[first] if created else None,
        held=flags.task_held,
        inbox=flags.inbox_pending,
    )


def _existing_run(tx: Tx, req: RunRequest, owner: str) -> Opened | None:
    """The task's run if it has one: finished (nothing to do) or claimed by this owner (resumed)."""
    run = tx.row(RunRow, "SELECT * FROM runs WHERE task_id = ?", (req.task_id,))
    if run is None:
        return None
    if run.finished_ms is not None:
        return Opened(run, finished=True)
    return Opened(
        _claim(tx, run, owner, req.attempt), resumed=True, held=task_held(tx, req.task_id)
    )


def _claim(tx: Tx, row: RunRow, owner: str, attempt: int) -> RunRow:
    """Take over an unfinished run: epoch + 1, the old run span closed ``interrupted``, a new one under it."""
    now = tx.now_ms
    epoch = row.epoch + 1
    old_span = row.span_id
    if old_span:
        tx.execute(
            "UPDATE spans SET status = 'interrupted', ended_ms = ? WHERE id = ? AND status = 'unfinished'",
            (now, old_span),
        )
    span_id = new_ulid()
    attrs = {
        "agen.attempt": attempt,
        "agen.epoch": epoch,
        "agen.owner": owner,
        "agen.resumed": True,
        "gen_ai.conversation.id": row.conversation_id,
    }
    tx.execute(
        SPAN_SQL,
        (
            span_id,
            row.trace_id,
            old_span,
            row.id,
            row.task_id,
            row.namespace,
            row.deployment,
            "agen.run",
            "unfinished",
            dumps(attrs),
            None,
            now,
            None,
        ),
    )
    tx.execute(
        "UPDATE runs SET epoch = ?, owner = ?, span_id = ?, status = 'running', updated_ms = ? WHERE id = ?",
        (epoch, owner, span_id, now, row.id),
    )
    tx.event(
        row.namespace,
        "run.resumed",
        deployment=row.deployment or None,
        task_id=row.task_id,
        run_id=row.id,
        data={"epoch": epoch, "attempt": attempt},
    )
    return row._replace(
        epoch=epoch, owner=owner, span_id=span_id, status=RunStatus.RUNNING, updated_ms=now
    )


def save_cassette(
    tx: Tx,
    run_id: str,
    namespace: str,
    deployment: str,
    digest: str | None,
    interactions: list[dict[str, Any]],
) -> None:
    """Append a run's recorded interactions to its cassette (a resumed run adds to the same one)."""
    from agen.store.base import loads

    now = tx.now_ms
    old = tx.scalar("SELECT interactions FROM cassettes WHERE run_id = ?", (run_id,))
    merged = [*(loads(old, []) if old else []), *interactions]
    tx.execute(
        "INSERT INTO cassettes (run_id, namespace, deployment, digest, interactions, created_ms, updated_ms)"
        " VALUES (?,?,?,?,?,?,?) ON CONFLICT (run_id) DO UPDATE SET interactions = excluded.interactions,"
        " updated_ms = excluded.updated_ms",
        (run_id, namespace, deployment, digest, dumps(merged), now, now),
    )
