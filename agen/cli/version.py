from __future__ import annotations

import platform
import sys

import typer

from agen.cli._common import JsonOpt, print_json


def version(json_out: JsonOpt = False) -> None:
    """Print agen's version."""
    from agen import __version__

    info = {"version": __version__, "python": platform.python_version(), "platform": sys.platform}
    if json_out:
        print_json(info)
    else:
        print(f"agen {__version__} (python {info['python']}, {info['platform']})")


def register(app: typer.Typer) -> None:
    app.command("version")(version)
