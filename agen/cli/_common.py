"""Conventions every command follows: global options, output, errors.

Results go to stdout (a rich table or, with ``--json``, JSON); progress and
diagnostics go to stderr. Heavy modules are imported inside command bodies so
``agen --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
import typer.main
from typer.core import TyperArgument, TyperCommand

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")
F = TypeVar("F", bound=Callable[..., Any])


def _shown(param: TyperArgument) -> str:
    """An argument as help lists it: its placeholder (``NAME``), not ``name <str>``."""
    return param.display_name_raw


class AgenCommand(TyperCommand):
    """A command whose arguments show by their placeholder alone: ``agen logs NAME`` and
    ``[NAME]``, not ``{name}``; ``NAME`` in the Arguments list, not ``name <str>``."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = _shown(param) + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                args.append((_shown(param), record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


@dataclass(frozen=True)
class Registered:
    """A command (its function) or a group registered on a Group, by name, with its settings."""

    name: str
    function: Callable[..., Any] | None
    group: Group | None
    settings: dict[str, Any]

    def register(self, on: Group, function: Callable[..., Any] | None = None) -> None:
        """Register the same again on ``on`` (a command with ``function`` in place of its own)."""
        if self.group is not None:
            on.add_typer(self.group, **self.settings)
        else:
            assert self.function is not None
            on.command(self.name, **self.settings)(function or self.function)


class Group(typer.Typer):
    """A Typer that remembers what was registered on it, through typer's public registration
    methods, so that agen.cli can register a part of it on a fresh Group and build only the click
    commands a command line needs (typer has no public way to read a Typer's commands back)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.agen_settings = settings
        self.agen_registered: list[Registered] = []
        self.agen_callback: tuple[Callable[..., Any], dict[str, Any]] | None = None

    def command(self, name: str | None = None, **settings: Any) -> Callable[[F], F]:
        settings.setdefault("cls", AgenCommand)
        register = super().command(name, **settings)

        def remember(function: F) -> F:
            named = name or typer.main.get_command_name(function.__name__)
            self.agen_registered.append(Registered(named, function, None, settings))
            return register(function)

        return remember

    def add_typer(
        self, typer_instance: typer.Typer, *, name: str | None = None, **settings: Any
    ) -> None:
        if name is not None:  # typer's default is a placeholder: an explicit None merges the groups
            settings = {"name": name, **settings}
        named = name or (
            typer_instance.agen_settings.get("name") if isinstance(typer_instance, Group) else None
        )
        if not isinstance(typer_instance, Group) or not named:
            raise TypeError("agen registers a Group made by group(), with a name")
        super().add_typer(typer_instance, **settings)
        self.agen_registered.append(Registered(named, None, typer_instance, settings))

    def callback(self, **settings: Any) -> Callable[[F], F]:
        register = super().callback(**settings)

        def remember(function: F) -> F:
            self.agen_callback = function, settings
            return register(function)

        return remember

    def fresh(self) -> Group:
        """A Group with these settings and callback, nothing registered on it yet."""
        new = Group(**self.agen_settings)
        if self.agen_callback is not None:
            function, settings = self.agen_callback
            new.callback(**settings)(function)
        return new


def group(**settings: Any) -> Group:
    """A command group with agen's help style: plain text (click's), not rich's. Rich help renders
    through rich's markdown machinery (doubling `agen --help`'s cold start) and shows typer's
    ``<bool>`` placeholders; ``rich_markup_mode=None`` is typer's public switch for plain help and
    errors, set on every group so that none depends on the environment or on import order."""
    return Group(rich_markup_mode=None, **settings)


HubOpt = Annotated[
    str | None,
    typer.Option(
        "--hub",
        envvar="AGEN_HUB",
        help="Hub URL (default: the local 'agen up').",
        show_default=False,
    ),
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", envvar="AGEN_TOKEN", help="API token.", show_default=False),
]
NamespaceOpt = Annotated[str, typer.Option("-n", "--namespace", help="Namespace.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
AnswersOpt = Annotated[
    str,
    typer.Option(
        "--model",
        help="Who answers: 'cassette' (the run's recorded answers, offline) or 'bundle' (the "
        "model of the bundle it runs on, asked live).",
    ),
]
"""Replaying a recorded run (`agen replay`, `agen eval dataset add`): checked by ``answers``."""
LabelOpt = Annotated[
    list[str] | None,
    typer.Option("--label", help="Label key=value (repeatable).", show_default=False),
]
"""A Nest's labels (`agen nest run`) and a join token's (`agen join-token create`)."""
NoTruncOpt = Annotated[
    bool,
    typer.Option(
        "--no-trunc",
        help="Show every value whole in a terminal too (piped output is never shortened).",
    ),
]

EXIT_CODES = {
    0: "ok",
    1: "the work failed (a task or run ended failed, cancelled or expired), or agen hit an internal error "
    "(printed as `agen: internal error: ...; please report it`)",
    2: "usage error or invalid input (bad flag, invalid bundle)",
    3: "Hub or another dependency unreachable (also: the deployment's instances cannot start, e.g. an MCP "
    "server that fails; the task stays queued)",
    4: "not found",
    5: "conflict (state refused the change)",
    6: "not allowed (token, scope, namespace)",
    7: "refused by a budget or admission limit",
    8: "still waiting (for an approval, or --timeout ran out); the task goes on",
    130: "interrupted",
}


def complete_deployments(ctx: Any, incomplete: str) -> list[str]:
    """Shell completion of deployment names (agen.cli._complete, loaded only when a shell asks)."""
    from agen.cli._complete import deployments

    return deployments(ctx, incomplete)


def complete_tasks(ctx: Any, incomplete: str) -> list[str]:
    """Shell completion of recent task ids."""
    from agen.cli._complete import tasks

    return tasks(ctx, incomplete)


def complete_approvals(ctx: Any, incomplete: str) -> list[str]:
    """Shell completion of pending approval ids."""
    from agen.cli._complete import approvals

    return approvals(ctx, incomplete)


def err(message: str) -> None:
    """A diagnostic line on stderr."""
    print(message, file=sys.stderr, flush=True)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def stdout_console() -> Any:
    from rich.console import Console

    console = Console(soft_wrap=False, highlight=False)
    if not console.is_terminal:  # piped to a file or grep: whole ids and values, never "…"
        wrapper: Any = _RStripLines(sys.stdout)  # only write/flush are used
        console = Console(soft_wrap=False, highlight=False, width=1000, file=wrapper)
    return console


class _RStripLines:
    """A stdout wrapper for wide non-terminal output: no trailing padding on any line."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, text: str) -> int:
        self._out.write("\n".join(line.rstrip() for line in text.split("\n")))
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return False


def parse_duration_ms(text: str, *, flag: str = "duration") -> int:
    """Parse Go-style durations (``90s``, ``1h30m``, ``720h``, ``0``) into milliseconds."""
    from agen.errors import InvalidError
    from agen.util.duration import parse_duration_ms as parse

    if text.strip() == "":
        return 0
    try:
        return parse(text)
    except ValueError as e:
        raise InvalidError(f"{flag}: {e}", field=flag) from None


def flag_name(field: str) -> str:
    """The CLI flag a request field comes from (``task_id`` -> ``--task-id``)."""
    return {"namespace": "-n/--namespace", "id": "ID", "name": "NAME"}.get(
        field, "--" + field.replace("_", "-")
    )


def make_request(model: type[M], flags: dict[str, str] | None = None, /, **fields: Any) -> M:
    """Build an API request from flags; a value the API would refuse is an InvalidError naming the flag.

    The request models carry the limits (``limit`` 1..1000, non-empty ids): checking them here, before
    any connection, gives `agen tasks --limit 0` a one-line "--limit 0: must be from 1 to 1000" (exit 2)
    instead of a pydantic dump. ``flags`` maps a field to what the user typed it as (``{"id": "TASK"}``).
    """
    from pydantic import ValidationError

    from agen.errors import InvalidError

    try:
        return model(**fields)
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        flag = (flags or {}).get(field) or flag_name(field)
        shown = repr(fields.get(field, first.get("input")))
        shown = shown if len(shown) <= 80 else shown[:76] + "...'"
        raise InvalidError(f"{flag} {shown}: {_explain(model, field, first)}", field=flag) from None


def _explain(model: type[BaseModel], field: str, error: Any) -> str:
    """One phrase for a pydantic error: the allowed range for numbers, "must not be empty" for ids."""
    kind = str(error.get("type", ""))
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        lo = hi = None
        info = model.model_fields.get(field)
        for meta in info.metadata if info else []:
            lo = getattr(meta, "ge", lo)
            hi = getattr(meta, "le", hi)
        if hi is not None and hi >= 2**53 and kind.startswith("greater"):
            hi = None  # a storage limit (int64), not a range worth reading when the value is too small
        if lo is not None and hi is not None:
            return f"must be from {lo} to {hi}"
        if lo is not None:
            return f"must be {lo} or more"
        if hi is not None:
            return f"must be at most {hi}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        return "is not a valid name (lowercase letters, digits and '-', starting with a letter)"
    return str(error.get("msg", "is not valid")).replace("Input should be", "must be")


def answers(model: str) -> Literal["bundle", "cassette"]:
    """``--model`` (AnswersOpt) as the replay takes it, or InvalidError naming what it takes."""
    if model == "bundle":
        return "bundle"
    if model == "cassette":
        return "cassette"
    from agen.errors import InvalidError

    raise InvalidError(f"--model {model[:40]!r}: use cassette or bundle", field="--model")


def is_folder(path: str) -> bool:
    """Whether ``path`` names a folder; a name the OS refuses (too long, NUL) is simply not one."""
    from pathlib import Path

    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False
