"""`agen init [dir]`: write a template bundle to start from (seed 002)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agen.cli._common import err, print_json

if TYPE_CHECKING:
    from agen.bundle.templates import Template


def init(
    directory: Annotated[
        str | None,
        typer.Argument(
            metavar="DIR",
            help="Folder to create (default: ./TEMPLATE, named after the template). Must be new or empty.",
            show_default=False,
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Template to start from: hello, researcher, writer, editor, pr-reviewer, fleet-steward, "
            "approval-triage, assistant, coder, ci-fixer, support, incident-responder, data-analyst "
            '(default "hello").',
            show_default=False,
        ),
    ] = None,
    example: Annotated[
        str | None, typer.Option("--example", help="Same as --template.", show_default=False)
    ] = None,
    list_only: Annotated[bool, typer.Option("--list", help="List the templates.")] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With --list: print the templates as JSON (else: the new bundle as JSON).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help='Write this model into the new bundle\'s x-agen/harness.json ("model") instead of the '
            "template's. A template on provider auto or fake switches provider too: a vendor/model name "
            "(anthropic/claude-sonnet-4, openrouter/auto) to openrouter, which needs OPENROUTER_API_KEY; any "
            "other name (gpt-5.4-mini, gemini-3.5-flash) to auto, which uses ANTHROPIC_API_KEY, OPENAI_API_KEY, "
            "GEMINI_API_KEY, OPENROUTER_API_KEY or a local Ollama. Without it the templates run a current "
            "model of whichever key is set. A routing model such as typesafe/jev-router picks the model per request.",
            show_default=False,
        ),
    ] = None,
    fallback: Annotated[
        str | None,
        typer.Option(
            "--fallback",
            help='Comma-separated models to try when the model keeps failing ("none" clears them).',
            show_default=False,
        ),
    ] = None,
    tier: Annotated[
        str | None,
        typer.Option(
            "--tier",
            help="Default cost tier for a routing model: low, medium, high (xhigh, max for openrouter/auto).",
            show_default=False,
        ),
    ] = None,
    max_tier: Annotated[
        str | None,
        typer.Option(
            "--max-tier",
            help="Highest cost tier a task may ask for (routing models).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a template bundle to start from (--template NAME; --list)."""
    from agen.bundle import templates as t
    from agen.errors import InvalidError

    if template and example and template != example:
        raise InvalidError(
            f"--template {template} and --example {example} disagree; give one of them",
            field="template",
        )
    if list_only:
        _print_list(t.list_templates(), json_out)
        return

    chosen = t.get_template(template or example or t.DEFAULT_TEMPLATE)
    changes = t.HarnessChanges(model=model, fallback=fallback, tier=tier, max_tier=max_tier)
    changes.check()
    harness = t.read_json(chosen.path / "x-agen" / "harness.json")
    notes = t.apply_harness_changes(harness, changes)  # before copying: a bad flag writes nothing

    shown = directory if directory is not None else chosen.name
    dest = Path(shown)
    try:
        written = t.copy_template(chosen, dest)
        if notes:
            t.write_json(dest / "x-agen" / "harness.json", harness)
    except (OSError, UnicodeError) as e:  # /proc/x, a read-only disk, a file where a folder goes
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InvalidError(
            f"cannot write the bundle to {dest}: {reason}; choose a folder you can write to",
            path=str(dest),
        ) from None

    plugin_path = dest / "plugin.json"
    plugin = t.read_json(plugin_path)
    base = dest.resolve().name
    if t.is_bundle_name(base):
        if plugin.get("name") != base:
            plugin["name"] = base
            t.write_json(plugin_path, plugin)
    else:
        err(
            f"note: {base!r} is not a valid bundle name (lowercase letters, digits and '-', starting with "
            f'a letter); the bundle keeps the name "{plugin.get("name")}" (edit plugin.json to change it)'
        )

    if json_out:
        print_json(
            {
                "dir": str(dest),
                "template": chosen.name,
                "name": plugin.get("name"),
                "files": written,
                "harness": {k: harness[k] for k in ("provider", "model") if k in harness},
                "changes": notes,
            }
        )
    else:
        print(str(dest))
    _explain(shown, dest, chosen.name, written, notes, harness)


def _print_list(rows: list[Template], json_out: bool) -> None:
    if json_out:
        print_json([{"name": tpl.name, "description": tpl.description} for tpl in rows])
        return
    width = max((len(tpl.name) for tpl in rows), default=0)
    for tpl in rows:
        print(f"{tpl.name:<{width}}  {tpl.description}")


def _explain(
    shown: str,
    dest: Path,
    template: str,
    written: list[str],
    notes: list[str],
    harness: dict[str, Any],
) -> None:
    """The diagnostics on stderr: what was written, what changed, what to run next."""
    import shlex

    from agen.bundle.templates import read_json

    err(f"wrote {len(written)} files to {shown}/ from template {template}:")
    for rel in written:
        err(f"  {rel}")
    for note in notes:
        err(f"set in x-agen/harness.json: {note}")
    if harness.get("provider") == "auto":
        from agen.runner.providers.auto import KEYS, MODELS

        keys = ", ".join(f"{names[0]} {MODELS[p]}" for p, names, _ in KEYS)
        model = harness.get("model")
        err(
            f"model: {model} via provider auto (the first of {', '.join(n[0] for _, n, _ in KEYS)} "
            "set, else a local Ollama, else the offline echo model)"
            if model
            else f"model: picked by provider auto from the key set ({keys}), else a local "
            "Ollama's, else the offline echo model"
        )
    secrets_path = dest / "x-agen" / "secrets.json"
    if secrets_path.is_file():
        secrets = read_json(secrets_path).get("secrets", {})
        for name, spec in secrets.items() if isinstance(secrets, dict) else ():
            source = spec.get("source", "env") if isinstance(spec, dict) else "env"
            where = (
                f"export {spec.get('env') or name}"
                if source == "env"
                else f"agen secret set {name}"
            )
            err(f"secret {name}: {where} ({source})")
    err(f'next: agen run {shlex.quote(shown)} "Hello"')


def register(app: typer.Typer) -> None:
    app.command("init")(init)
