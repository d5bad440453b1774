"""``agen eval``: scenarios run K times offline (scores, pass@k, pass^k), two versions compared,
recorded evals listed, datasets built from real runs.

``agen eval <bundle-dir>`` is ``agen eval run <bundle-dir>``. Exit codes: ``run`` 0 when every
scenario passed every run, 1 when any run failed, 2 for a bad scenario file or bundle;
``compare`` 1 when a scenario regressed (passed every run on A, not on B).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    complete_deployments,
    err,
    group,
    is_folder,
    make_request,
    print_json,
)

if TYPE_CHECKING:
    from agen.bundle import Bundle
    from agen.client import Client
    from agen.evals.compare import Side
    from agen.evals.suite import Report
    from agen.wire.evals import GetEvalRunsResponse

DEFAULT_SCENARIOS = "x-agen/evals"


class _RunByDefault(TyperGroup):
    """``agen eval DIR …`` runs the scenarios (seed 002's form); named subcommands win."""

    default_command = "run"  # what the group runs when its first word names no command

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


eval_app = group(
    cls=_RunByDefault,
    help="Run scenario files against a bundle offline (`agen eval DIR` = `agen eval run DIR`); "
    "compare two versions; list recorded evals; build datasets from real runs.",
    no_args_is_help=True,
)

ScenariosOpt = Annotated[
    str | None,
    typer.Option(
        "--scenarios",
        help="A scenario file or a folder of *.json (default: x-agen/evals in the bundle).",
        show_default=False,
    ),
]
RunsOpt = Annotated[
    int, typer.Option("--runs", help="Runs per scenario (pass@k: one passed; pass^k: all).")
]
ParallelOpt = Annotated[int, typer.Option("--parallel", help="Runs at once.")]


def scenarios_path(bundle_dir: str, scenarios: str | None) -> Path:
    return Path(scenarios) if scenarios else Path(bundle_dir) / DEFAULT_SCENARIOS


def evaluate(
    bundle: Bundle,
    where: Path,
    runs: int,
    parallel: int,
    *,
    quiet: bool = False,
    root: Path | None = None,
    store_url: str | None = None,
) -> Report:
    """Run the scenarios with a progress bar on stderr (rich); the report."""
    from rich.console import Console
    from rich.progress import Progress

    from agen.bundle.scenario import load_scenarios
    from agen.errors import InvalidError
    from agen.evals.suite import run_suite

    if runs < 1:
        raise InvalidError(f"--runs {runs}: run each scenario at least once", field="--runs")
    scenarios = load_scenarios(where)
    with Progress(console=Console(stderr=True), transient=True, disable=quiet) as bar:
        job = bar.add_task(f"eval {bundle.name}", total=len(scenarios) * runs)
        from agen.cli._hub import run as run_async

        return run_async(
            run_suite(
                bundle,
                scenarios,
                runs,
                parallel=parallel,
                on_done=lambda _a: bar.advance(job),
                root=root,
                store_url=store_url,
            )
        )


def money(usd: float) -> str:
    return f"${usd:.4f}" if usd else "-"


def millis(ms: float) -> str:
    return f"{ms / 1000:.1f}s" if ms >= 1000 else f"{ms:.0f}ms"


def print_report(report: Report) -> None:
    from agen.cli._table import print_table

    rows = [
        [
            s.name,
            f"{s.score:.2f}",
            f"{s.passes}/{len(s.attempts)}",
            "yes" if s.pass_at_k else "no",
            "yes" if s.pass_hat_k else "no",
            f"{s.mean_tokens:.0f}",
            money(s.mean_cost_usd),
            millis(s.mean_duration_ms),
            next((f"run {a.run_index}: {a.failures[0]}" for a in s.attempts if a.failures), ""),
        ]
        for s in report.scores
    ]
    print_table(
        [
            "SCENARIO",
            "SCORE",
            "PASSED",
            f"PASS@{report.runs}",
            f"PASS^{report.runs}",
            "TOKENS",
            "COST",
            "TIME",
            "FIRST FAILURE",
        ],
        rows,
        flexible=("FIRST FAILURE",),
    )
    print(
        f"{report.bundle} ({report.digest[:19]}): {sum(s.pass_hat_k for s in report.scores)}/{len(report.scores)}"
        f" scenarios passed all {report.runs} run(s) (pass rate {report.pass_rate:.2f},"
        f" mean score {report.score:.2f})"
    )


@eval_app.command("run")
def eval_run(
    bundle_dir: Annotated[str, typer.Argument(help="The bundle folder.", show_default=False)],
    scenarios: ScenariosOpt = None,
    runs: RunsOpt = 1,
    parallel: ParallelOpt = 4,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL (SQLite path or postgres://) for the eval runs, kept for `agen transcript "
            "--store`-style inspection (default: a scratch SQLite database, removed after).",
            show_default=False,
        ),
    ] = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Keep the report in the Hub (per bundle digest): `agen eval history` and "
            "`agen eval compare` read it back.",
        ),
    ] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Run scenario files against a bundle offline (mocked tools, scripted or recorded model).

    Each scenario runs --runs times; each check gives a score (0.0-1.0) and the report shows per
    scenario the mean score, pass@k and pass^k, mean tokens, cost and time. Exit 0 when every run
    of every scenario passed, 1 when any failed, 2 for a bad scenario or bundle."""
    from agen.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    report = evaluate(
        bundle,
        scenarios_path(bundle_dir, scenarios),
        runs,
        parallel,
        root=Path(bundle_dir),
        store_url=store,
    )
    if record:
        batch = with_hub(hub, token, lambda c: record_report(c, report, namespace, report.bundle))
        err(f"recorded eval {batch} of {report.bundle} ({report.digest[:19]})")
    if json_out:
        print_json(report.to_dict())
    else:
        print_report(report)
    if not report.all_passed:
        raise typer.Exit(1)


def with_hub(hub: str | None, token: str | None, fn: Any) -> Any:
    from agen.cli._hub import with_client

    return with_client(hub, token, fn)


async def record_report(c: Client, report: Report, namespace: str, name: str) -> str:
    """RecordEvalRuns: every run of the report, its score and checks, under ``name``; the eval id."""
    from agen.api import registry as r
    from agen.wire.evals import EvalCheck, EvalRunIn, RecordEvalRunsRequest

    req = RecordEvalRunsRequest(
        namespace=namespace,
        bundle=name,
        digest=report.digest,
        runs=[
            EvalRunIn(
                scenario=a.scenario,
                run_index=a.run_index,
                passed=a.passed,
                failures=[f[:2000] for f in a.failures[:100]],
                duration_ms=a.duration_ms,
                score=max(0.0, min(1.0, a.score)),
                input_tokens=a.input_tokens,
                output_tokens=a.output_tokens,
                cost_usd=a.cost_usd,
                checks=[
                    EvalCheck(
                        check=x.check,
                        name=x.name[:200],
                        score=max(0.0, min(1.0, x.score)),
                        passed=x.passed,
                        reason=x.reason[:4000],
                        turn=x.turn,
                    )
                    for x in a.checks[:200]
                ],
            )
            for s in report.scores
            for a in s.attempts
        ],
    )
    resp = await c.call(r.RecordEvalRuns, req)
    return resp.batch


@eval_app.command("history")
def history(
    name: Annotated[
        str,
        typer.Argument(
            help="Deployment (or bundle) name, or a bundle folder.",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ],
    limit: Annotated[int, typer.Option("--limit", help="Most recent evals.")] = 20,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Recorded evals of a deployment, newest first (`deploy --require-eval` and `eval --record`)."""
    from agen.api import registry as r
    from agen.cli._hub import when
    from agen.cli._table import print_table
    from agen.wire.evals import ListEvalRunsRequest

    if is_folder(name):
        from agen.bundle import load_bundle

        name = load_bundle(name).name
    list_req = make_request(
        ListEvalRunsRequest, {"bundle": "NAME"}, namespace=namespace, bundle=name, limit=limit
    )
    resp = with_hub(hub, token, lambda c: c.call(r.ListEvalRuns, list_req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.evals:
        print(
            f"no recorded evals of {name}; `agen eval <bundle-dir> --record` or "
            "`agen deploy --require-eval` records one"
        )
        return
    rows = [
        [
            e.batch,
            when(e.created_ms),
            e.digest[:19],
            f"{sum(ok == n for ok, n in e.scenarios.values())}/{len(e.scenarios)}",
            f"{sum(e.scores.values()) / len(e.scores):.2f}" if e.scores else "-",
            ", ".join(f"{s} {ok}/{n}" for s, (ok, n) in e.scenarios.items()),
        ]
        for e in resp.evals
    ]
    print_table(
        ["EVAL", "WHEN", "DIGEST", "ALL PASSED", "SCORE", "SCENARIOS (passed/runs)"],
        rows,
        flexible=("SCENARIOS (passed/runs)",),
    )


def _recorded(c: Client, ref: str, namespace: str, bundle: str | None) -> Any:
    from agen.api import registry as r
    from agen.wire.evals import GetEvalRunsRequest

    req = make_request(
        GetEvalRunsRequest, {"ref": "A/B"}, namespace=namespace, ref=ref, bundle=bundle
    )
    return c.call(r.GetEvalRuns, req)


@eval_app.command("compare")
def compare_cmd(
    a: Annotated[
        str,
        typer.Argument(
            help="The baseline: a bundle folder, a bundle digest or a recorded eval id.",
            show_default=False,
        ),
    ],
    b: Annotated[
        str,
        typer.Argument(help="The candidate, in the same forms.", show_default=False),
    ],
    scenarios: Annotated[
        str | None,
        typer.Option(
            "--scenarios",
            help="Scenarios for a bundle folder side (default: x-agen/evals of the first folder given).",
            show_default=False,
        ),
    ] = None,
    runs: RunsOpt = 1,
    parallel: ParallelOpt = 4,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Two versions side by side: per scenario, score, pass rate, cost and time, with the difference.

    Regressions (passed every run on A, not on B) come first, then lower scores. A folder side is
    evaluated now (both folders on the same scenarios); a digest or eval id is read from the Hub.
    Exit 1 when any scenario regressed."""
    from agen.evals.compare import compare

    folders = [x for x in (a, b) if is_folder(x)]
    where = (
        Path(scenarios)
        if scenarios
        else (Path(folders[0]) / DEFAULT_SCENARIOS if folders else None)
    )
    sides = [_side(x, where, runs, parallel, hub, token, namespace) for x in (a, b)]
    rows = compare(sides[0], sides[1])
    if json_out:
        print_json(
            {
                "a": _side_dict(sides[0]),
                "b": _side_dict(sides[1]),
                "scenarios": [r.to_dict() for r in rows],
                "regressed": [r.scenario for r in rows if r.change == "regressed"],
                "fixed": [r.scenario for r in rows if r.change == "fixed"],
            }
        )
    else:
        _print_compare(sides[0], sides[1], rows)
    if any(r.change == "regressed" for r in rows):
        raise typer.Exit(1)


def _side(
    ref: str,
    where: Path | None,
    runs: int,
    parallel: int,
    hub: str | None,
    token: str | None,
    namespace: str,
) -> Side:
    from agen.evals.compare import side_of_recorded, side_of_report

    if is_folder(ref):
        from agen.bundle import load_bundle

        assert where is not None
        return side_of_report(
            ref, evaluate(load_bundle(ref), where, runs, parallel, root=Path(ref))
        )
    rec: GetEvalRunsResponse = with_hub(hub, token, lambda c: _recorded(c, ref, namespace, None))
    return side_of_recorded(ref, rec)


def _side_dict(s: Side) -> dict[str, Any]:
    return {
        "ref": s.label,
        "bundle": s.bundle,
        "digest": s.digest,
        "passRate": round(s.pass_rate, 4),
        "score": round(s.score, 4),
    }


def _print_compare(a: Side, b: Side, rows: list[Any]) -> None:
    from agen.cli._table import print_table

    def delta(x: float | None, y: float | None, fmt: str) -> str:
        if x is None or y is None:
            return "-"
        d = y - x
        return "0" if abs(d) < 1e-9 else format(d, "+" + fmt)

    out = []
    for r in rows:
        fa, fb = r.a, r.b
        out.append(
            [
                r.scenario,
                r.change,
                f"{fa.score:.2f}" if fa else "-",
                f"{fb.score:.2f}" if fb else "-",
                delta(fa and fa.score, fb and fb.score, ".2f"),
                f"{fa.passed}/{fa.runs}" if fa else "-",
                f"{fb.passed}/{fb.runs}" if fb else "-",
                money(fa.cost_usd) if fa else "-",
                money(fb.cost_usd) if fb else "-",
                millis(fa.duration_ms) if fa else "-",
                millis(fb.duration_ms) if fb else "-",
                delta(fa and fa.duration_ms, fb and fb.duration_ms, ".0f"),
            ]
        )
    print(f"A: {a.label} ({a.bundle} {a.digest[:19]})")
    print(f"B: {b.label} ({b.bundle} {b.digest[:19]})")
    print_table(
        [
            "SCENARIO",
            "CHANGE",
            "SCORE A",
            "SCORE B",
            "Δ SCORE",
            "PASS A",
            "PASS B",
            "COST A",
            "COST B",
            "MS A",
            "MS B",
            "Δ MS",
        ],
        out,
    )
    print(
        f"pass rate {a.pass_rate:.2f} → {b.pass_rate:.2f}, mean score {a.score:.2f} → {b.score:.2f}; "
        f"{sum(r.change == 'regressed' for r in rows)} regressed, "
        f"{sum(r.change == 'fixed' for r in rows)} fixed"
    )


def register(app: typer.Typer) -> None:
    from agen.cli import eval_dataset

    eval_dataset.register(eval_app)
    app.add_typer(eval_app, name="eval")


def require_eval(bundle_dir: str, scenarios: str | None, runs: int) -> Report:
    """``agen deploy --require-eval``: refuse (InvalidError, exit 2) a bundle below its declared bar."""
    from agen.bundle import load_bundle
    from agen.errors import InvalidError

    bundle = load_bundle(bundle_dir)
    report = evaluate(bundle, scenarios_path(bundle_dir, scenarios), runs, 4, root=Path(bundle_dir))
    bar = bundle.config.eval.min_pass_rate
    failed = [f"{s.name} ({s.passes}/{len(s.attempts)})" for s in report.scores if not s.pass_hat_k]
    if report.pass_rate < bar:
        raise InvalidError(
            f"deploy refused: {bundle.name} passes {report.pass_rate:.2f} of its eval scenarios on every run, "
            f"below its bar eval.minPassRate {bar:.2f}; failed: {', '.join(failed)}; "
            f"`agen eval {bundle_dir} --runs {runs}` shows why",
            field="--require-eval",
            failed=failed,
        )
    note = f"; failed within the bar: {', '.join(failed)}" if failed else ""
    err(
        f"eval passed: {report.pass_rate:.2f} of {len(report.scores)} scenarios on all {runs} run(s) "
        f"(bar {bar:.2f}){note}"
    )
    return report


async def flips_against_deployed(c: Client, report: Report, namespace: str, name: str) -> list[str]:
    """``deploy --require-eval``, before deploying: this report against the newest eval recorded
    for the digest deployed now, else the deployment's newest eval (seed 002: a report on file for
    that deployment), as one line per scenario that flipped; nothing on file: no lines."""
    from agen.api import registry as r
    from agen.errors import NotFoundError
    from agen.evals.compare import compare, flips, side_of_recorded, side_of_report
    from agen.wire.deployments import GetDeploymentRequest
    from agen.wire.evals import ListEvalRunsRequest

    try:
        dep = await c.call(r.GetDeployment, GetDeploymentRequest(namespace=namespace, name=name))
    except NotFoundError:
        return []
    if dep.deployment is None:
        return []
    refs = [dep.deployment.digest]
    listed = await c.call(
        r.ListEvalRuns, ListEvalRunsRequest(namespace=namespace, bundle=name, limit=1)
    )
    refs += [e.batch for e in listed.evals]
    for ref in refs:
        try:
            rec = await _recorded(c, ref, namespace, name)
        except NotFoundError:
            continue
        rows = compare(side_of_recorded(ref, rec), side_of_report("this bundle", report))
        what = (
            "the deployed digest" if rec.digest == dep.deployment.digest else "the newest on file"
        )
        lines = flips(rows)
        if lines:
            lines.insert(0, f"against eval {rec.batch} of {rec.digest[:19]} ({what}):")
        return lines
    return []
