"""What `agen run --stream` prints: each turn's text as it comes, the outcome only where the stream
did not already show it, a turn asked again on a new line, a turn joined mid-way not at all."""

from __future__ import annotations

import io
from typing import Any

from agen.cli._stream import StreamPrinter


def ev(type_: str, turn: int = 1, **data: Any) -> dict[str, Any]:
    return {"type": type_, "seq": None, "data": {"turn": turn, **data}}


def delta(text: str, turn: int = 1) -> dict[str, Any]:
    return ev("run.delta", turn, text=text, kind="text")


def printer() -> tuple[StreamPrinter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return StreamPrinter(out, err), out, err


def test_streamed_turns_print_once_and_the_outcome_adds_only_what_is_missing() -> None:
    p, out, _ = printer()
    for e in (ev("model.started"), delta("Looking "), delta("it up."), ev("model.finished")):
        p.on(e)
    p.on(ev("model.started", 2))
    p.on(delta("The answer ", 2))
    p.on(ev("run.delta", 2, text="(thinking)", kind="thinking"))  # not printed
    assert p.rest("The answer is 42.") == "is 42."  # the stream was behind: the rest, same line
    assert out.getvalue() == "Looking it up.\nThe answer "


def test_an_outcome_the_stream_did_not_show_is_printed_whole_on_its_own_line() -> None:
    p, out, _ = printer()
    for e in (ev("model.started"), delta("Calling finish."), ev("model.finished")):
        p.on(e)
    p.on(ev("model.started", 2))
    assert p.rest("Summary from finish") == "Summary from finish"
    p2, out2, _ = printer()
    for e in (ev("model.started"), delta("All of it."), ev("model.finished")):
        p2.on(e)
    assert p2.rest("All of it.") is None and out2.getvalue() == "All of it.\n"
    assert out.getvalue() == "Calling finish.\n"


def test_a_retried_call_starts_a_new_line_and_a_turn_joined_midway_is_skipped() -> None:
    p, out, err = printer()
    p.on(delta("late words"))  # its model.started came before this follower: not shown in part
    p.on(ev("model.started"))
    p.on(delta("half"))
    p.on(ev("model.started", attempt=1))  # the stream broke off: the model is asked again
    p.on(delta("whole answer"))
    assert out.getvalue() == "half\nwhole answer"
    assert "asked again" in err.getvalue()
