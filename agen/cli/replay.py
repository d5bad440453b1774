"""``agen replay <run>``: a recorded run re-run offline, and what changed (tool calls, outcome).

Exit code 0 once the replay ran (changed or not: read the diff, or ``changed`` in ``--json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agen.cli._common import (
    AnswersOpt,
    HubOpt,
    JsonOpt,
    TokenOpt,
    answers,
    err,
    make_request,
    print_json,
    stdout_console,
)


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
    model: AnswersOpt = "cassette",
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

    answerer = answers(model)
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
    if not src.interactions and answerer == "cassette":
        err(
            "note: this run has no cassette (recordInteractions is off); the model's answers come from its transcript"
        )
    from agen.cli._hub import run as run_async

    p, attempt = run_async(replay(src, bundle, answerer))
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
