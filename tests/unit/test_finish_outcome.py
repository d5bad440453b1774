"""A run ends on the outcome its ``finish`` call declared, read from the turn's tool results in one
place (agen.runner.loop.finish_outcome) for a live turn and for a turn repaired after a crash."""

from __future__ import annotations

from typing import Any

from agen.domain import Outcome, OutcomeStatus
from agen.runner.calls import CallResult
from agen.runner.loop import finish_outcome
from agen.runner.providers.base import ToolCallOut


def result(name: str, data: Any = None, *, is_error: bool = False, i: int = 0) -> CallResult:
    return CallResult(ToolCallOut(f"c{i}", name, {}), i, "ok", is_error=is_error, data=data)


def test_a_turn_without_a_finish_call_does_not_end_the_run() -> None:
    assert finish_outcome([result("read_file"), result("write_file", i=1)]) is None


def test_a_failed_finish_call_does_not_end_the_run() -> None:
    failed = result("finish", {"outcome": Outcome(status=OutcomeStatus.DONE)}, is_error=True)
    assert finish_outcome([failed]) is None


def test_the_run_ends_with_the_last_successful_finish_of_the_turn() -> None:
    outcome = finish_outcome(
        [
            result("finish", {"outcome": Outcome(status=OutcomeStatus.PARTIAL, summary="first")}),
            result("read_file", i=1),
            result("finish", {"outcome": Outcome(status=OutcomeStatus.DONE, summary="last")}, i=2),
        ]
    )
    assert outcome is not None
    assert (outcome.status, outcome.summary) == ("done", "last")
