"""``agen eval dataset add DIR``: real runs turned into scenario files in bulk (agen/evals/dataset.py).

Runs are picked by feedback (``--from-feedback "score<0"``), by id (``--run``), by deployment
and time (``--deployment``, ``--since``); each becomes one scenario with its tool results as
mocks, deduplicated by input against the folder. Checks for every new scenario come from
``--rubric`` and ``--checks FILE`` (a JSON list); without any, a scenario expects status done.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from agen.cli._common import (
    AnswersOpt,
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    answers,
    complete_deployments,
    err,
    group,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.bundle.scenario_checks import Check
    from agen.client import Client

dataset_app = group(help="Scenario folders built from real runs (`add`).", no_args_is_help=True)


def _checks(rubric: str | None, threshold: float, checks_file: str | None) -> list[Check]:
    from pydantic import TypeAdapter, ValidationError

    from agen.bundle.scenario_checks import Check as CheckType
    from agen.bundle.scenario_checks import RubricCheck
    from agen.errors import InvalidError

    out: list[Check] = []
    if checks_file is not None:
        try:
            raw = json.loads(Path(checks_file).read_text(encoding="utf-8"))
            out += TypeAdapter(list[CheckType]).validate_python(raw)
        except (OSError, ValueError) as e:
            first = e.errors()[0] if isinstance(e, ValidationError) else None
            where = (
                ".".join(str(p) for p in first["loc"]) + ": " + first["msg"] if first else str(e)
            )
            raise InvalidError(
                f"--checks {checks_file}: not a JSON list of checks ({where})", field="--checks"
            ) from None
    if rubric is not None:
        out.append(RubricCheck(type="rubric", rubric=rubric, threshold=threshold))
    return out


@dataset_app.command("add")
def add(
    folder: Annotated[
        str, typer.Argument(help="The dataset folder (created if missing).", show_default=False)
    ],
    from_feedback: Annotated[
        str | None,
        typer.Option(
            "--from-feedback",
            help='Runs whose feedback matches, e.g. "score<0", "score<=0.5,by=reviewer".',
            show_default=False,
        ),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option("--run", help="A run or task id (repeatable).", show_default=False),
    ] = None,
    deployment: Annotated[
        str | None,
        typer.Option(
            "--deployment",
            help="Only runs of this deployment (alone: its recent finished runs).",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only runs (or feedback) within this long, e.g. 24h.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many runs.")] = 100,
    rubric: Annotated[
        str | None,
        typer.Option("--rubric", help="A rubric check on every new scenario.", show_default=False),
    ] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="The rubric check's pass threshold (0.0-1.0).")
    ] = 0.7,
    checks_file: Annotated[
        str | None,
        typer.Option(
            "--checks",
            help="A JSON file: a list of checks for every new scenario.",
            show_default=False,
        ),
    ] = None,
    model: AnswersOpt = "bundle",
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Turn real runs into scenario files: their input, their tool results as mocks."""
    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import with_client
    from agen.errors import InvalidError
    from agen.evals.dataset import FeedbackFilter

    answerer = answers(model)
    if not (from_feedback or run or deployment):
        raise InvalidError(
            "say which runs: --from-feedback EXPR, --run ID or --deployment NAME",
            field="--from-feedback",
        )
    if not 0.0 <= threshold <= 1.0:
        raise InvalidError(f"--threshold {threshold}: use 0.0 to 1.0", field="--threshold")
    checks = _checks(rubric, threshold, checks_file)
    flt = FeedbackFilter.parse(from_feedback) if from_feedback else None
    since_ms = parse_duration_ms(since, flag="--since") if since else None

    async def go(c: Client) -> list[tuple[Any, str]]:
        picked = await _pick(c, namespace, flt, list(run or []), deployment, since_ms, limit)
        return await _sources(c, picked)

    result = _write(Path(folder), with_client(hub, token, go), answerer, checks)
    if json_out:
        print_json(result)
        return
    for name in result["added"]:
        print(f"added {Path(folder) / (name + '.json')}")
    if result["duplicates"]:
        err(f"skipped {len(result['duplicates'])} run(s) whose input is already in {folder}")
    err(
        f"{len(result['added'])} scenario(s) added to {folder}; `agen eval <bundle-dir> --scenarios "
        f"{folder}` runs them"
    )


async def _pick(
    c: Client,
    namespace: str,
    flt: Any,
    runs: list[str],
    deployment: str | None,
    since_ms: int | None,
    limit: int,
) -> list[tuple[str, str]]:
    """(run or task id, why it was picked), oldest feedback first, each run once."""
    from agen.api import registry as r
    from agen.cli._hub import ago
    from agen.wire.feedback import ListFeedbackRequest
    from agen.wire.observe import ListRunsRequest

    picked: dict[str, str] = {ref: "picked by id" for ref in runs}
    if flt is not None:
        fb = await c.call(
            r.ListFeedback,
            make_request(
                ListFeedbackRequest,
                namespace=namespace,
                deployment=deployment,
                since_ms=since_ms,
                limit=10000,
            ),
        )
        for f in reversed(fb.feedback):
            if flt.matches(f) and f.run_id not in picked:
                note = f": {f.note}" if f.note else ""
                picked[f.run_id] = (
                    f"feedback {f.score:+.2f} by {f.by or '?'} {ago(f.created_ms)}{note}"
                )
    elif deployment is not None:
        listed = await c.call(
            r.ListRuns,
            make_request(
                ListRunsRequest,
                namespace=namespace,
                deployment=deployment,
                since_ms=since_ms,
                limit=max(1, min(limit, 1000)),
            ),
        )
        for run in reversed(listed.runs):
            if run.status not in ("running", "queued") and run.parent_run_id is None:
                picked.setdefault(run.id, f"a {run.status} run")
    return list(picked.items())[:limit]


async def _sources(c: Client, picked: list[tuple[str, str]]) -> list[tuple[Any, str]]:
    from agen.api import registry as r
    from agen.wire.evals import GetReplaySourceRequest

    reqs = [
        (make_request(GetReplaySourceRequest, {"id": "--run"}, id=ref), why) for ref, why in picked
    ]
    return [(await c.call(r.GetReplaySource, req), why) for req, why in reqs]


def _write(
    folder: Path,
    sources: list[tuple[Any, str]],
    model: Literal["bundle", "cassette"],
    checks: list[Check],
) -> dict[str, Any]:
    from agen.evals.dataset import existing_keys, input_key, scenario_of

    seen = existing_keys(folder)
    added: list[str] = []
    duplicates: list[str] = []
    for src, why in sources:
        data = scenario_of(src, model, checks, why)
        key = input_key(data)
        if key in seen:
            duplicates.append(src.run.id)
            continue
        seen.add(key)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{data['name']}.json").write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        added.append(data["name"])
    return {"folder": str(folder), "added": added, "duplicates": duplicates}


def register(app: typer.Typer) -> None:
    app.add_typer(dataset_app, name="dataset")
