"""Task commands: wait, cancel, pause, resume, tasks (``agen run`` is in agen/cli/run.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    NoTruncOpt,
    TokenOpt,
    complete_deployments,
    complete_tasks,
    err,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.cli._stream import StreamPrinter
    from agen.client import Client
    from agen.wire.tasks import Task

TaskArg = Annotated[
    str, typer.Argument(help="Task id.", show_default=False, autocompletion=complete_tasks)
]
MAX_WAIT_S = 300.0


async def wait_for_task(
    client: Client, task_id: str, timeout_ms: int, namespace: str | None = None
) -> Task:
    """Wait (in <=300 s GetTask calls) until the task ends, waits for an approval, or time runs out."""
    import time

    from agen.api import registry as r
    from agen.wire.tasks import TERMINAL_STATES, GetTaskRequest

    deadline = None if timeout_ms == 0 else time.monotonic() + timeout_ms / 1000
    while True:
        left = (
            MAX_WAIT_S
            if deadline is None
            else max(0.0, min(MAX_WAIT_S, deadline - time.monotonic()))
        )
        task = (
            await client.call(
                r.GetTask,
                make_request(
                    GetTaskRequest,
                    {"id": "TASK"},
                    id=task_id,
                    namespace=namespace,
                    wait_seconds=left,
                ),
            )
        ).task
        if (
            task.state in TERMINAL_STATES
            or task.pending_approvals
            or task.wait_reason == "instance_failing"
        ):
            return task
        if deadline is not None and time.monotonic() >= deadline:
            return task


def outcome_text(task: Task) -> str:
    o = task.outcome or {}
    summary = str(o.get("summary") or "")
    if not summary and o.get("data") is not None:
        import json

        summary = json.dumps(o["data"], ensure_ascii=False)
    return summary


STILL_WAITING = 8  # EXIT_CODES[8]: the task goes on (approval, or --timeout ran out)


def report_task(task: Task, json_out: bool, streamed: StreamPrinter | None = None) -> None:
    """Outcome on stdout, status on stderr; exit 1 when the task failed, was cancelled or expired, 3 when it
    stays queued because its deployment's instances cannot start, 8 when it has not ended yet (it waits for
    an approval or --timeout ran out). ``streamed``: the answer was printed as it came, so only what
    it did not show of the outcome is printed."""
    from agen.wire.tasks import TERMINAL_STATES

    if streamed is not None and task.state not in TERMINAL_STATES:
        streamed.rest("")  # end a streamed line before the status
    if json_out:
        print_json(task.model_dump(mode="json"))
    elif task.state in TERMINAL_STATES:
        text: str | None = outcome_text(task)
        if text and streamed is not None:
            text = streamed.rest(text)
        if text:
            print(text, flush=True)
        reason = (task.outcome or {}).get("reason") or task.error
        status = (task.outcome or {}).get("status", task.state)
        err(
            f"task {task.id} {task.state} ({status}{': ' + str(reason) if reason and task.state != 'succeeded' else ''})"
        )
        if task.state == "failed" and task.error and task.error not in (text, reason):
            err(task.error)  # e.g. the provider hold this failure started, and how to end it
        if task.effect_unknown:
            err(
                f"task {task.id}: effect unknown: its run resumed past a side effect that was started and never "
                f"confirmed, and did not repeat it; check whether it took effect (`agen transcript {task.id}`)"
            )
    elif task.pending_approvals:
        ids = ", ".join(task.pending_approvals)
        err(
            f"task {task.id} is waiting for approval {ids}: see it with `agen approvals`, "
            f"then `agen approve {task.pending_approvals[0]}` or `agen deny {task.pending_approvals[0]}`; "
            f"`agen wait {task.id}` prints the result"
        )
    elif task.wait_reason == "instance_failing":
        err(
            f"task {task.id} is queued, but instances of {task.deployment} keep failing to start: {task.wait_detail}\n"
            f"Fix the bundle and redeploy it (`agen deploy <dir>`; `agen logs {task.deployment}` shows the "
            f"failures); the task stays queued and runs once an instance starts (`agen wait {task.id}`), "
            f"or `agen cancel {task.id}`."
        )
    else:
        err(
            f"task {task.id} is still {task.state}"
            + (f" ({task.wait_reason})" if task.wait_reason else "")
            + f"; `agen wait {task.id}` keeps waiting"
        )
    if task.state in ("failed", "cancelled", "expired"):
        raise typer.Exit(1)
    if (
        task.wait_reason == "instance_failing"
    ):  # queued on a dependency that cannot start (the table's 3)
        raise typer.Exit(3)
    if task.state not in TERMINAL_STATES:
        raise typer.Exit(STILL_WAITING)


def wait(
    task_id: TaskArg,
    timeout: Annotated[
        str, typer.Option("--timeout", help="How long to wait (0: no limit).")
    ] = "0",
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Wait for a task submitted earlier and print its result."""
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.wire.tasks import GetTaskRequest

    timeout_ms = parse_duration_ms(timeout, flag="--timeout")
    make_request(
        GetTaskRequest, {"id": "TASK"}, id=task_id, namespace=namespace
    )  # bad flags before connecting

    async def go(c: Client) -> Task:
        from agen.cli._ids import full_id

        return await wait_for_task(
            c, await full_id(c, "task", task_id, namespace), timeout_ms, namespace
        )

    report_task(with_client(hub, token, go), json_out)


def _done(task: Task, verb: str, json_out: bool) -> None:
    if json_out:
        print_json(task.model_dump(mode="json"))
    else:
        print(f"{task.id}: {verb} ({task.state})")


TreeOpt = Annotated[
    bool,
    typer.Option(
        "--tree",
        help="Every unfinished task of its whole tree (its root and every descendant), not just this one.",
    ),
]


def cancel(
    task_id: TaskArg,
    tree: TreeOpt = False,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="hard (or immediate): stop at once. graceful: give each running task a last turn to call "
            "finish before stopping it.",
        ),
    ] = "hard",
    grace: Annotated[
        str | None,
        typer.Option(
            "--grace",
            help="--mode graceful only: how long to wait for a last turn before stopping anyway "
            "(default 20s, at most 5m).",
            show_default=False,
        ),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Cancel a task (a running one stops; --mode graceful gives it a last turn first)."""
    from agen.api import registry as r
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.errors import InvalidError
    from agen.wire.tasks import CancelTaskRequest

    if mode not in ("hard", "immediate", "graceful"):
        raise InvalidError(f"--mode {mode!r}: use hard or graceful", field="--mode")
    if grace is not None and mode != "graceful":
        raise InvalidError(
            "--grace applies to --mode graceful only; add --mode graceful or leave it out",
            field="--grace",
        )
    grace_s = None if grace is None else parse_duration_ms(grace, flag="--grace") / 1000
    if grace_s is not None and not 0 < grace_s <= 300:
        raise InvalidError(
            f"--grace {grace}: give a duration above 0 and at most 5m", field="--grace"
        )
    req = make_request(
        CancelTaskRequest,
        {"id": "TASK"},
        id=task_id,
        namespace=namespace,
        tree=tree,
        mode=mode,
        grace_period_seconds=grace_s,
    )
    task = with_client(hub, token, lambda c: call_resolved(c, r.CancelTask, req, "task")).task
    # a graceful cancel's run may have wrapped up in time: it ended however it finished
    _done(task, "cancelled" if task.state == "cancelled" else "ended", json_out)


def pause(
    task_id: TaskArg,
    at: Annotated[
        str | None,
        typer.Option("--at", help="End the hold at this time (RFC 3339).", show_default=False),
    ] = None,
    in_: Annotated[
        str | None,
        typer.Option(
            "--in", help="End the hold this long from now (e.g. 30m).", show_default=False
        ),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(
            "--reason", help="Why, for anyone who looks at the task later.", show_default=False
        ),
    ] = None,
    tree: TreeOpt = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Hold a task (a running one suspends at its next model call)."""
    from agen.api import registry as r
    from agen.cli._hub import hold_until, with_client
    from agen.cli._ids import call_resolved
    from agen.wire.tasks import PauseTaskRequest

    req = make_request(
        PauseTaskRequest,
        {"id": "TASK"},
        id=task_id,
        namespace=namespace,
        hold_until_ms=hold_until(at, in_),
        reason=reason,
        tree=tree,
    )
    _done(
        with_client(hub, token, lambda c: call_resolved(c, r.PauseTask, req, "task")).task,
        "held",
        json_out,
    )


def resume(
    task_id: TaskArg,
    tree: TreeOpt = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """End a hold started by agen pause."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.wire.tasks import ResumeTaskRequest

    req = make_request(
        ResumeTaskRequest, {"id": "TASK"}, id=task_id, namespace=namespace, tree=tree
    )
    _done(
        with_client(hub, token, lambda c: call_resolved(c, r.ResumeTask, req, "task")).task,
        "resumed",
        json_out,
    )


def tasks(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only this deployment.",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ] = None,
    scheduled: Annotated[
        bool, typer.Option("--scheduled", help="Only tasks waiting for their start time.")
    ] = False,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help="Only tasks in this state: queued, running, succeeded, failed, cancelled.",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="Only tasks with this label, key=value (repeatable).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Tasks.")] = 20,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Recent tasks (--scheduled: waiting for their start time)."""

    from typing import get_args

    from agen.api import registry as r
    from agen.cli._hub import ago, when, with_client
    from agen.cli._table import print_table
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.wire.tasks import ListTasksRequest, TaskState

    states = get_args(TaskState)
    if state is not None and state not in states:
        raise InvalidError(f"--state {state!r}: use one of {', '.join(states)}", field="--state")
    req = make_request(
        ListTasksRequest,
        {"name": "DEPLOYMENT"},
        namespace=namespace,
        deployment=name,
        state=state,
        labels=parse_labels(label or []),
        scheduled=scheduled,
        limit=limit,
    )
    resp = with_client(hub, token, lambda c: c.call(r.ListTasks, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    rows = []
    for task in resp.tasks:
        wait_col = (
            task.wait_reason
            or ("approval" if task.pending_approvals else "")
            or ("held" if task.held else "")
        )
        last = when(task.not_before_ms) if scheduled else task.input.replace("\n", " ")
        state_col = f"{task.state}, effect unknown" if task.effect_unknown else task.state
        rows.append(
            (
                task.id,
                task.deployment,
                state_col,
                wait_col,
                task.priority,
                ago(task.created_ms),
                last,
            )
        )
    print_table(
        (
            "ID",
            "DEPLOYMENT",
            "STATE",
            "WAIT",
            "PRIORITY",
            "SUBMITTED",
            "STARTS" if scheduled else "INPUT",
        ),
        rows,
        no_trunc=no_trunc,
        flexible=("INPUT",),
    )


def register(app: typer.Typer) -> None:
    app.command("wait")(wait)
    app.command("cancel")(cancel)
    app.command("pause")(pause)
    app.command("resume")(resume)
    app.command("tasks")(tasks)
