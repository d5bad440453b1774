"""agen's optional parts (pyproject's extras), and the one error for a missing one.

The core install runs the Hub, Nests, runs and the TUI; the A2A Gateway and A2A calls need the
``a2a`` extra (a2a-sdk with protobuf and google-auth: 17 distributions) and ``agen ui`` the ``ui``
extra (textual-serve with aiohttp). Each is looked for without importing it.
"""

from __future__ import annotations

import importlib.util

from agen.errors import InvalidError

MODULES = {"a2a": "a2a", "ui": "textual_serve"}
"""An extra's name -> a module only it installs."""


def installed(extra: str) -> bool:
    try:
        return importlib.util.find_spec(MODULES[extra]) is not None
    except (
        ImportError
    ):  # a finder that refuses the module (the tests' stand-in for "not installed")
        return False


def missing(extra: str, what: str) -> str:
    """The one-line reason ``what`` cannot run without ``extra``, with the command that installs it."""
    return (
        f"{what} needs agen's {extra!r} extra, which is not installed: "
        f"pip install 'agen[{extra}]' (or 'agen[all]')"
    )


def require(extra: str, what: str, **details: str) -> None:
    """Raise InvalidError naming ``extra`` when it is not installed."""
    if not installed(extra):
        raise InvalidError(missing(extra, what), extra=extra, **details)
