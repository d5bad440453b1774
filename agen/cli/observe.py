"""Seeing what agents did: ``agen runs``, ``agen transcript``, ``agen trace``, ``agen query``."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    NoTruncOpt,
    TokenOpt,
    complete_deployments,
    complete_tasks,
    make_request,
    print_json,
    stdout_console,
)

RefArg = Annotated[
    str,
    typer.Argument(help="Task id or run id.", show_default=False, autocompletion=complete_tasks),
]


def runs(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only this deployment.",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ] = None,
    roots: Annotated[
        bool,
        typer.Option(
            "--roots",
            help="Only runs that started a trace, with the usage of the runs they delegated to.",
        ),
    ] = False,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="running, waiting_approval, succeeded, failed or cancelled.",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label", help="Only runs with this key=value label (repeatable).", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only runs started within this long (e.g. 1h).", show_default=False
        ),
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="Only the run of this task.", show_default=False)
    ] = None,
    effect_unknown: Annotated[
        bool,
        typer.Option(
            "--effect-unknown",
            help="Only runs that resumed past a side effect that was started and never "
            "confirmed: check whether it took effect.",
        ),
    ] = False,
    limit: Annotated[int, typer.Option("--limit", help="Runs.")] = 20,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Recent runs (--roots: one per trace, --status, --label, --effect-unknown).

    STATUS reads "succeeded, effect unknown" for a run that resumed past a side effect whose
    completion was never recorded: agen did not repeat it, so check whether it happened."""
    from agen.api import registry as r
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.cli._table import print_table
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.render.observe import RUN_COLUMNS, runs_rows
    from agen.wire.observe import ListRunsRequest

    statuses = ("running", "waiting_approval", "succeeded", "failed", "cancelled")
    if status is not None and status not in statuses:
        raise InvalidError(
            f"--status {status!r}: use one of {', '.join(statuses)}", field="--status"
        )
    labels = parse_labels(label or [])
    req = make_request(
        ListRunsRequest,
        {"name": "DEPLOYMENT"},
        namespace=namespace,
        deployment=name,
        roots=roots,
        status=status,
        labels=labels,
        since_ms=parse_duration_ms(since, flag="--since") if since else None,
        task_id=task,
        effect_unknown=effect_unknown,
        limit=limit,
    )
    resp = with_client(
        hub, token, lambda c: call_resolved(c, r.ListRuns, req, "task", field="task_id")
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    elif not resp.runs:
        print("no runs match; `agen run <deployment> <input>` starts one")
    else:
        print_table(RUN_COLUMNS, runs_rows(resp.runs, roots=roots), no_trunc=no_trunc)


def transcript(
    ref: RefArg,
    history: Annotated[
        bool, typer.Option("--history", help="Also the earlier messages of the conversation.")
    ] = False,
    system: Annotated[bool, typer.Option("--system", help="Also the system prompt.")] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """What a run sent to the model and got back, tool calls included; a failed run ends with why."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.render.observe import transcript_lines
    from agen.wire.observe import GetTranscriptRequest

    req = make_request(
        GetTranscriptRequest,
        {"id": "REF"},
        id=ref,
        namespace=namespace,
        history=history,
        system=system,
    )
    resp = with_client(hub, token, lambda c: call_resolved(c, r.GetTranscript, req, "task_or_run"))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    console = stdout_console()
    for line in transcript_lines(resp):
        console.print(line)


def trace(
    ref: Annotated[
        str,
        typer.Argument(
            help="Task id, trace id or run id.",
            show_default=False,
            autocompletion=complete_tasks,
        ),
    ],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
    otlp_json: Annotated[
        bool,
        typer.Option(
            "--otlp-json",
            help="Print the trace as OTLP/JSON (an ExportTraceServiceRequest; needs agen[otel]).",
        ),
    ] = False,
) -> None:
    """Span tree of a trace, across agents (a time bar per span).

    Exits 1 when the trace's root run failed or was cancelled, 0 otherwise (also when an attempt
    inside it failed and a retry succeeded)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.render.observe import trace_tree
    from agen.wire.observe import GetTraceRequest

    req = make_request(GetTraceRequest, {"id": "REF"}, id=ref, namespace=namespace)
    resp = with_client(hub, token, lambda c: call_resolved(c, r.GetTrace, req, "any"))
    if otlp_json:
        from agen.otel.trace_json import trace_otlp_json

        print_json(trace_otlp_json(resp))
        return
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    stdout_console().print(trace_tree(resp))
    # The exit code follows the outcome, as `agen wait`'s does: an error span a retry recovered from is
    # shown (and counted in --json) but a run that ended well exits 0.
    if any(run.status in ("failed", "cancelled") for run in resp.runs if run.parent_run_id is None):
        raise typer.Exit(1)


def query(
    task_id: Annotated[
        str,
        typer.Argument(help="Task id.", show_default=False, autocompletion=complete_tasks),
    ],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Its progress, current activity and outcome, without waiting on it."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.render.observe import query_view
    from agen.wire.observe import QueryTaskRequest

    req = make_request(QueryTaskRequest, {"id": "TASK"}, id=task_id, namespace=namespace)
    resp = with_client(hub, token, lambda c: call_resolved(c, r.QueryTask, req, "task"))
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        stdout_console().print(query_view(resp))


def register(app: typer.Typer) -> None:
    app.command("runs")(runs)
    app.command("transcript")(transcript)
    app.command("trace")(trace)
    app.command("query")(query)
