"""``agen eval`` (scenarios K times: pass@k, pass^k) and ``agen replay`` (a recorded run, re-run).

Exit codes: ``agen eval`` 0 when every scenario passed every run, 1 when any run failed, 2 for a
bad scenario file or bundle. ``agen replay`` 0 once the replay ran (changed or not: read the diff,
or ``changed`` in ``--json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    err,
    make_request,
    print_json,
    stdout_console,
)

if TYPE_CHECKING:
    from agen.bundle import Bundle
    from agen.evals.suite import Report

DEFAULT_SCENARIOS = "x-agen/evals"


def scenarios_path(bundle_dir: str, scenarios: str | None) -> Path:
    return Path(scenarios) if scenarios else Path(bundle_dir) / DEFAULT_SCENARIOS


def evaluate(
    bundle: Bundle, where: Path, runs: int, parallel: int, *, quiet: bool = False
) -> Report:
    """Run the scenarios with a progress bar on stderr (rich); the report."""
    from rich.console import Console
    from rich.progress import Progress

    from agen.errors import InvalidError
    from agen.evals.scenario import load_scenarios
    from agen.evals.suite import run_suite

    if runs < 1:
        raise InvalidError(f"--runs {runs}: run each scenario at least once", field="--runs")
    scenarios = load_scenarios(where)
    with Progress(console=Console(stderr=True), transient=True, disable=quiet) as bar:
        job = bar.add_task(f"eval {bundle.name}", total=len(scenarios) * runs)
        from agen.cli._hub import run as run_async

        return run_async(
            run_suite(
                bundle, scenarios, runs, parallel=parallel, on_done=lambda _a: bar.advance(job)
            )
        )


def print_report(report: Report) -> None:
    from agen.cli._table import print_table

    rows = [
        [
            s.name,
            f"{s.passes}/{len(s.attempts)}",
            "yes" if s.pass_at_k else "no",
            "yes" if s.pass_hat_k else "no",
            next((f"run {a.run_index}: {a.failures[0]}" for a in s.attempts if a.failures), ""),
        ]
        for s in report.scores
    ]
    print_table(
        ["SCENARIO", "PASSED", f"PASS@{report.runs}", f"PASS^{report.runs}", "FIRST FAILURE"], rows
    )
    print(
        f"{report.bundle} ({report.digest[:19]}): {sum(s.pass_hat_k for s in report.scores)}/{len(report.scores)}"
        f" scenarios passed all {report.runs} run(s) (pass rate {report.pass_rate:.2f})"
    )


def eval_cmd(
    bundle_dir: Annotated[
        str,
        typer.Argument(
            help="The bundle folder (with --history: a bundle folder or name).", show_default=False
        ),
    ],
    scenarios: Annotated[
        str | None,
        typer.Option(
            "--scenarios",
            help="A scenario file or a folder of *.json (default: x-agen/evals in the bundle).",
            show_default=False,
        ),
    ] = None,
    runs: Annotated[
        int, typer.Option("--runs", help="Runs per scenario (pass@k: one passed; pass^k: all).")
    ] = 1,
    parallel: Annotated[int, typer.Option("--parallel", help="Runs at once.")] = 4,
    store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Keep every run's result in the Hub's store (per bundle digest) for --history.",
        ),
    ] = False,
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="Show the recorded evals of this bundle, newest first, instead of running.",
        ),
    ] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Run scenario files against a bundle offline (mocked tools, scripted or recorded model).

    Each scenario runs --runs times in a scratch store; exit 0 when every run of every scenario
    passed, 1 when any failed, 2 for a bad scenario or bundle."""
    if history:
        _history(bundle_dir, hub, token, namespace, json_out)
        return
    from agen.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    report = evaluate(bundle, scenarios_path(bundle_dir, scenarios), runs, parallel)
    if store:
        _record(report, hub, token, namespace)
    if json_out:
        print_json(report.to_dict())
    else:
        print_report(report)
    if not report.all_passed:
        raise typer.Exit(1)


def _record(report: Report, hub: str | None, token: str | None, namespace: str) -> None:
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.evals import EvalRunIn, RecordEvalRunsRequest

    req = RecordEvalRunsRequest(
        namespace=namespace,
        bundle=report.bundle,
        digest=report.digest,
        runs=[
            EvalRunIn(
                scenario=a.scenario,
                run_index=a.run_index,
                passed=a.passed,
                failures=a.failures[:100],
                duration_ms=a.duration_ms,
            )
            for s in report.scores
            for a in s.attempts
        ],
    )
    resp = with_client(hub, token, lambda c: c.call(r.RecordEvalRuns, req))
    err(f"recorded {resp.recorded} eval runs (batch {resp.batch})")


def _history(ref: str, hub: str | None, token: str | None, namespace: str, json_out: bool) -> None:
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.cli._table import print_table
    from agen.wire.evals import ListEvalRunsRequest

    name = ref
    if Path(ref).is_dir():
        from agen.bundle import load_bundle

        name = load_bundle(ref).name
    list_req = make_request(
        ListEvalRunsRequest, {"bundle": "BUNDLE"}, namespace=namespace, bundle=name
    )
    resp = with_client(hub, token, lambda c: c.call(r.ListEvalRuns, list_req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.evals:
        print(f"no recorded evals of {name}; `agen eval <bundle-dir> --store` records one")
        return
    rows = [
        [
            when(e.created_ms),
            e.digest[:19],
            f"{sum(ok == n for ok, n in e.scenarios.values())}/{len(e.scenarios)}",
            ", ".join(f"{s} {ok}/{n}" for s, (ok, n) in e.scenarios.items()),
        ]
        for e in resp.evals
    ]
    print_table(["WHEN", "DIGEST", "ALL PASSED", "SCENARIOS (passed/runs)"], rows)


def replay_cmd(
    run: Annotated[str, typer.Argument(help="Run id or task id.", show_default=False)],
    bundle_dir: Annotated[
        str | None,
        typer.Option(
            "--bundle",
            help="Replay against this bundle folder (default: the deployment's current definition).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="Who answers: 'cassette' (the recorded answers, offline) or 'bundle' (the bundle's own "
            "provider, to see what the model does now).",
        ),
    ] = "cassette",
    export: Annotated[
        str | None,
        typer.Option(
            "--export",
            help="Write the run as a scenario file for `agen eval` (recorded model and tool results).",
            show_default=False,
        ),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-run a recorded run offline and show what changed: tool calls, their order, the outcome.

    Tools answer with the results recorded for the same call (nothing is executed again); the
    run happens in a scratch store and never touches the fleet."""
    import base64

    from agen.api import registry as r
    from agen.bundle import load_bundle, load_bundle_files
    from agen.cli._hub import with_client
    from agen.errors import InvalidError
    from agen.evals.replay import plan, replay, scenario_file
    from agen.wire.evals import GetReplaySourceRequest

    if model not in ("cassette", "bundle"):
        raise InvalidError(f"--model {model[:40]!r}: use cassette or bundle", field="--model")
    src_req = make_request(GetReplaySourceRequest, {"id": "RUN"}, id=run)
    src = with_client(hub, token, lambda c: c.call(r.GetReplaySource, src_req))
    if export:
        Path(export).write_text(
            json.dumps(scenario_file(plan(src, "cassette")), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        err(f"wrote scenario {export}")
    if bundle_dir is not None:
        bundle = load_bundle(bundle_dir)
    elif src.files is not None:
        bundle = load_bundle_files({p: base64.b64decode(d) for p, d in src.files.items()})
    else:
        raise InvalidError(
            f"deployment {src.run.deployment} no longer exists; pass --bundle DIR to replay against "
            "a bundle folder",
            field="--bundle",
        )
    if not src.interactions and model == "cassette":
        err(
            "note: this run has no cassette (recordInteractions is off); the model's answers come from its transcript"
        )
    from agen.cli._hub import run as run_async

    p, attempt = run_async(replay(src, bundle, "bundle" if model == "bundle" else "cassette"))
    from agen.evals.replay import diff

    d = diff(p, attempt)
    if json_out:
        print_json({"run": src.run.id, "model": model, "bundle": bundle.digest, **d})
        return
    _print_diff(src.run.id, d)


def _print_diff(run_id: str, d: dict[str, Any]) -> None:
    console = stdout_console()
    calls, outcome = d["calls"], d["outcome"]
    if not d["changed"]:
        console.print(
            f"replay of {run_id}: no change (same tool calls in the same order, same outcome)"
        )
        return
    console.print(f"replay of {run_id}: changed")
    if calls["changed"]:
        console.print("tool calls:", markup=False)
        for line in calls["diff"][2:]:
            if not line.startswith("@@"):
                console.print(f"  {line}", markup=False)
    if outcome["changed"]:
        b, a = outcome["before"], outcome["after"]
        for key in ("status", "summary", "data"):
            if b[key] != a[key]:
                console.print(
                    f"outcome {key}: {json.dumps(b[key], ensure_ascii=False)} → "
                    f"{json.dumps(a[key], ensure_ascii=False)}",
                    markup=False,
                )


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
    app.command("eval")(eval_cmd)


def require_eval(bundle_dir: str, scenarios: str | None, runs: int) -> None:
    """``agen deploy --require-eval``: refuse (InvalidError, exit 2) a bundle below its declared bar."""
    from agen.bundle import load_bundle
    from agen.errors import InvalidError

    bundle = load_bundle(bundle_dir)
    report = evaluate(bundle, scenarios_path(bundle_dir, scenarios), runs, 4)
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
