"""``agen feedback record <task|run> --score S`` and ``agen feedback ls`` (seed 002): ratings kept with runs."""

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
    group,
    make_request,
    print_json,
)

feedback_app = group(
    help="Scores on how tasks went (-1.0..1.0), kept with the runs they rate.", no_args_is_help=True
)

LabelOpt = Annotated[
    list[str] | None, typer.Option("--label", help="key=value (repeatable).", show_default=False)
]


def score_text(score: float) -> str:
    return f"{score:+.2f}"


@feedback_app.command("record")
def record(
    ref: Annotated[
        str,
        typer.Argument(
            help="Task id or run id.", show_default=False, autocompletion=complete_tasks
        ),
    ],
    score: Annotated[
        float,
        typer.Option(
            "--score",
            help="From -1.0 (bad) to 1.0 (good); a 0.0-1.0 rating fits inside.",
            show_default=False,
        ),
    ],
    note: Annotated[
        str | None, typer.Option("--note", help="What went well or wrong.", show_default=False)
    ] = None,
    label: LabelOpt = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Record a judgement on how a task went (shown in `agen runs` and `agen transcript`)."""
    import math

    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.wire.feedback import RecordFeedbackRequest

    if math.isnan(score) or not -1.0 <= score <= 1.0:
        raise InvalidError(
            f"--score {score}: use a number from -1.0 (bad) to 1.0 (good)", field="--score"
        )
    req = make_request(
        RecordFeedbackRequest,
        {"id": "TASK"},
        namespace=namespace,
        id=ref,
        score=score,
        note=note,
        labels=parse_labels(label or []),
    )
    resp = with_client(hub, token, lambda c: call_resolved(c, r.RecordFeedback, req, "task_or_run"))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    f = resp.feedback
    print(
        f"{f.id}: {score_text(f.score)} on run {f.run_id} ({f.deployment}{', task ' + f.task_id if f.task_id else ''})"
    )


@feedback_app.command("ls")
def ls(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only this deployment.",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ] = None,
    label: LabelOpt = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only feedback recorded within this long (e.g. 24h).",
            show_default=False,
        ),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help="Only feedback on this task or run.", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Entries.")] = 100,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Feedback, newest first (--json: with run id, task id, deployment and definition digest, for export)."""
    import json

    from agen.api import registry as r
    from agen.cli._common import err, parse_duration_ms
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.hub.events.log import parse_labels
    from agen.wire.feedback import ListFeedbackRequest

    req = make_request(
        ListFeedbackRequest,
        {"id": "--task", "deployment": "DEPLOYMENT"},
        namespace=namespace,
        deployment=name,
        id=task,
        labels=parse_labels(label or []),
        since_ms=parse_duration_ms(since, flag="--since") if since else None,
        limit=limit,
    )
    resp = with_client(hub, token, lambda c: c.call(r.ListFeedback, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.feedback:
        err("no feedback matches; `agen feedback record <task> --score S` records some")
        return
    print_table(
        ("ID", "DEPLOYMENT", "TASK", "RUN", "SCORE", "LABELS", "NOTE", "BY", "WHEN"),
        [
            (
                f.id,
                f.deployment,
                f.task_id or "-",
                f.run_id,
                score_text(f.score),
                json.dumps(f.labels, ensure_ascii=False) if f.labels else "-",
                (f.note or "-"),
                f.by or "-",
                ago(f.created_ms),
            )
            for f in resp.feedback
        ],
        no_trunc=no_trunc,
        flexible=("NOTE", "LABELS"),
    )


def register(app: typer.Typer) -> None:
    app.add_typer(feedback_app, name="feedback")
