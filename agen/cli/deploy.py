"""`agen deploy <bundle-dir> --validate`: check a bundle without deploying it.

Deploying to a Hub is added with the Hub; until then the command only validates, and says so.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import JsonOpt, err, print_json


def deploy(
    directory: Annotated[str, typer.Argument(help="The bundle folder.", show_default=False)],
    validate: Annotated[
        bool, typer.Option("--validate", help="Check the bundle and print warnings without deploying.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Create or update a deployment (--validate: check only).

    This build has no Hub yet, so only --validate works: it loads the bundle, prints its
    definition id (name@sha256:...) and any warnings, and lists every problem if it is invalid.
    """
    from agen.bundle import validate_bundle
    from agen.errors import BundleError, InvalidError

    if not validate:
        raise InvalidError(
            "deploying needs a Hub, which this build does not have yet; "
            f"run 'agen deploy {directory} --validate' to check the bundle",
            field="--validate",
        )
    bundle, problems, warnings = validate_bundle(directory)
    if json_out:
        print_json({
            "valid": bundle is not None,
            "name": bundle.name if bundle else None,
            "digest": bundle.digest if bundle else None,
            "definitionId": bundle.definition_id if bundle else None,
            "problems": problems,
            "warnings": warnings,
        })
        if bundle is None:
            raise typer.Exit(2)
        return
    for warning in warnings:
        err(f"warning: {warning}")
    if bundle is None:
        count = len(problems)
        raise BundleError(f"bundle {directory} is invalid ({count} problem{'s' if count != 1 else ''})", problems)
    print(f"ok: {bundle.name} ({bundle.definition_id})")


def register(app: typer.Typer) -> None:
    app.command("deploy")(deploy)
