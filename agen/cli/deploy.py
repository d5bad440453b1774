"""`agen deploy <bundle-dir>`: create or update a deployment (--validate: check only; --watch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agen.cli._common import HubOpt, JsonOpt, NamespaceOpt, TokenOpt, err, make_request, print_json

if TYPE_CHECKING:
    from agen.bundle import Bundle
    from agen.client import Client
    from agen.wire.deployments import CreateDeploymentRequest, DeploymentResponse


def _validate(directory: str, json_out: bool) -> None:
    from agen.bundle import validate_bundle
    from agen.errors import BundleError, TooLargeError
    from agen.wire.limits import BundleLimits

    bundle, problems, warnings = validate_bundle(directory)
    if bundle is not None:
        try:  # the size limits a deploy is refused by (encode_files), so --validate says it first
            BundleLimits.from_env().check(bundle.files)
        except TooLargeError as e:
            bundle, problems = None, [e.message]
    if bundle is not None:
        from agen.runner.sandboxing import missing_sandbox

        why = missing_sandbox(bundle.sandboxed_parts())
        if why is not None:
            bundle, problems = None, [f"x-agen/harness.json: sandbox: {why}"]
    if bundle is not None:
        import os

        from agen.bundle.secret_check import unset_secrets

        warnings += unset_secrets(bundle.secrets, os.environ, where="this environment")
    if json_out:
        print_json(
            {
                "valid": bundle is not None,
                "name": bundle.name if bundle else None,
                "digest": bundle.digest if bundle else None,
                "definitionId": bundle.definition_id if bundle else None,
                "problems": problems,
                "warnings": warnings,
            }
        )
        if bundle is None:
            raise typer.Exit(2)
        return
    for warning in warnings:
        err(f"warning: {warning}")
    if bundle is None:
        count = len(problems)
        raise BundleError(
            f"bundle {directory} is invalid ({count} problem{'s' if count != 1 else ''})", problems
        )
    print(f"ok: {bundle.name} ({bundle.definition_id})")


def refuse_without_sandbox(bundle: Bundle) -> None:
    """A bundle whose commands or servers run sandboxed is not deployed (nor run) from a machine
    where the sandbox cannot start: it would be refused at its first command, never run unconfined."""
    from agen.errors import BundleError
    from agen.runner.sandboxing import missing_sandbox

    why = missing_sandbox(bundle.sandboxed_parts())
    if why is not None:
        raise BundleError(
            f"bundle {bundle.name} needs the sandbox", [f"x-agen/harness.json: sandbox: {why}"]
        )


def deploy_request(
    directory: str, namespace: str, name: str | None, replicas: int | None
) -> CreateDeploymentRequest:
    """A CreateDeploymentRequest carrying the bundle's files (checked locally first)."""
    from agen.bundle import load_bundle
    from agen.hub.rpc.deployments import encode_files
    from agen.wire.deployments import CreateDeploymentRequest

    bundle = load_bundle(directory)  # an unreadable folder is an InvalidError naming it
    refuse_without_sandbox(bundle)
    return make_request(
        CreateDeploymentRequest,
        namespace=namespace,
        name=name,
        replicas=replicas,
        files=encode_files(dict(bundle.files)),
    )


def _report(resp: DeploymentResponse, json_out: bool) -> None:
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    for warning in resp.warnings:
        err(f"warning: {warning}")
    d = resp.deployment
    assert d is not None
    verb = "created" if resp.created else ("updated" if resp.changed else "unchanged")
    print(f"{d.name}: {verb} ({d.definition_id})")


def deploy(
    directory: Annotated[str, typer.Argument(help="The bundle folder.", show_default=False)],
    validate: Annotated[
        bool,
        typer.Option("--validate", help="Check the bundle and print warnings without deploying."),
    ] = False,
    name: Annotated[
        str | None,
        typer.Option("--name", help="Deployment name (default: bundle name).", show_default=False),
    ] = None,
    replicas: Annotated[
        int, typer.Option("--replicas", help="Desired instances after deploying (-1: keep).")
    ] = -1,
    watch: Annotated[
        bool, typer.Option("--watch", help="Redeploy on every change of the bundle folder.")
    ] = False,
    require_eval: Annotated[
        bool,
        typer.Option(
            "--require-eval",
            help="Run the bundle's eval scenarios first and refuse (exit 2) a bundle below its bar "
            "(x-agen/config.json eval.minPassRate: the share of scenarios passing every run; default 1.0).",
        ),
    ] = False,
    eval_runs: Annotated[
        int, typer.Option("--eval-runs", help="Runs per scenario for --require-eval.")
    ] = 1,
    scenarios: Annotated[
        str | None,
        typer.Option(
            "--scenarios",
            help="Eval scenarios for --require-eval (default: x-agen/evals in the bundle).",
            show_default=False,
        ),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Create or update a deployment (--validate: check only).

    The bundle is checked locally, sent as its files and stored by the Hub as a content-addressed
    definition (name@sha256:...); deploying an unchanged bundle changes nothing.
    """
    if validate:
        _validate(directory, json_out)
        return
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.errors import AgenError

    def once() -> None:
        req = deploy_request(directory, namespace, name, replicas if replicas >= 0 else None)
        if not require_eval:
            _report(with_client(hub, token, lambda c: c.call(r.CreateDeployment, req)), json_out)
            return
        from agen.bundle import load_bundle
        from agen.cli.evals import flips_against_deployed, record_report
        from agen.cli.evals import require_eval as check

        report = check(directory, scenarios, eval_runs)
        target = name or load_bundle(directory).name

        async def go(c: Client) -> DeploymentResponse:
            # the flips are read against the digest deployed *before* this one replaces it
            for line in await flips_against_deployed(c, report, namespace, target):
                err(line)
            resp = await c.call(r.CreateDeployment, req)
            batch = await record_report(c, report, namespace, target)
            err(f"recorded eval {batch} against {target} (`agen eval history {target}`)")
            return resp

        _report(with_client(hub, token, go), json_out)

    once()
    if not watch:
        return
    from watchfiles import watch as watch_files

    err(f"watching {directory} (Ctrl-C to stop)")
    for _changes in watch_files(directory):
        try:
            once()
        except AgenError as e:  # keep watching: the next save may fix it
            err(f"error: {e}")


def register(app: typer.Typer) -> None:
    app.command("deploy")(deploy)
