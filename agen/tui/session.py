"""The TUI of `agen up`, run beside the Hub: a failure of the TUI never stops the Hub.

Textual ends an app on any exception its handlers let through (a bug in a screen, a widget, a worker),
with return code 1. `agen up` runs its TUI in the Hub's process and loop, so that used to end
`agen up` with it. Here the failed app is replaced by a small one that says what failed, that the
Hub keeps serving, and what to do: r starts the TUI again, q drains and stops `agen up`, which then
exits 1 (the TUI failed: a bug worth a non-zero status). The traceback goes to stderr as Textual would
print it, so it is on the terminal when `agen up` exits.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import ClassVar

from rich.console import Console
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label, Static


class TuiFailedApp(App[bool]):
    """What `agen up` shows after its TUI failed: the error, the Hub still serving, r or q.
    Returns True to start the TUI again."""

    CSS = """
    Screen { align: center middle; }
    .failed { width: 90; max-width: 95%; height: auto; padding: 1 2; border: thick $error; }
    .failed-title { text-style: bold; margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "restart", "Restart the TUI"),
        Binding("q,ctrl+c", "quit_up", "Quit agen up"),
    ]

    def __init__(self, error: str, hub_url: str) -> None:
        super().__init__()
        self.error = error
        self.hub_url = hub_url

    def compose(self) -> ComposeResult:
        with Vertical(classes="failed"):
            yield Label("The TUI failed; agen up keeps serving", classes="failed-title")
            yield Static(
                f"{self.error}\n\n"
                f"The Hub at {self.hub_url} keeps serving: tasks run and the API answers "
                "(`agen tui` in another terminal shows the fleet). The traceback is printed to "
                "the terminal; please report it.\n\n"
                "  r  start the TUI again\n"
                "  q  quit: drain and stop agen up (it exits with code 1)",
                id="failed-text",
            )

    def action_restart(self) -> None:
        self.exit(True)

    def action_quit_up(self) -> None:
        self.exit(False)


class TuiSession:
    """Runs the TUI until the operator quits it (or `stop` is called), through any failure of it."""

    def __init__(
        self, make_app: Callable[[], App[None]], hub_url: str, *, headless: bool = False
    ) -> None:
        self.make_app = make_app
        self.hub_url = hub_url
        self.headless = headless
        self.app: App[None] | App[bool] | None = None
        """The app shown now: the TUI, or the one saying it failed."""
        self.failures: list[str] = []
        """What failed, one line each (the last line of each traceback)."""
        self.stopping = False

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    async def run(self) -> None:
        """Until the operator quits: the TUI; after a failure, what failed, and r starts it again."""
        while not self.stopping:
            app = self.make_app()
            errors = io.StringIO()
            app.error_console = Console(file=errors, width=100, markup=False, highlight=False)
            self.app = app
            await app.run_async(headless=self.headless)
            if app.return_code == 0 or self.stopping:
                return
            trace = errors.getvalue()
            print(trace, file=sys.stderr, flush=True)
            self.failures.append(_summary(trace))
            told: App[bool] = TuiFailedApp(self.failures[-1], self.hub_url)
            self.app = told
            again = await told.run_async(headless=self.headless)
            if not again:
                return

    def stop(self) -> None:
        """End the session from outside (`agen up` drains on a signal or `agen down`)."""
        self.stopping = True
        if self.app is not None:
            self.app.exit()


def _summary(trace: str) -> str:
    """The exception's type and message: the last line of the traceback Textual printed."""
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    return lines[-1] if lines else "the TUI ended with an error (no traceback was printed)"
