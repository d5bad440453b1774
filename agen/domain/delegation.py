"""How a child task's end reads to the task that delegated it (seed 000 §6 "Delegation").

The engine (call_agent's result, a joined child's note) and the Hub (a detached child's reply,
submitted to its caller's conversation) render the same text, so the rule lives here, below both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agen.domain.states import TERMINAL


@dataclass
class ChildState:
    id: str
    deployment: str
    state: str
    outcome: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL


def outcome_text(child: ChildState) -> str:
    """A child's outcome as its caller reads it (seed 000 §6): ``[partial: max_turns] <report>``
    (nothing before a plain done), then its structured data, if any."""
    out = child.outcome or {}
    status = str(out.get("status") or ("failed" if child.state != "succeeded" else "done"))
    reason = out.get("reason")
    summary = str(out.get("summary") or child.error or "")
    head = "" if status == "done" else f"[{status}: {reason}] " if reason else f"[{status}] "
    text = head + summary
    if out.get("data") is not None:
        text += "\n\n" + json.dumps(out["data"], indent=2, sort_keys=True)
    return text


def result_note(child: ChildState) -> str:
    """The user message a joined child's end becomes in its parent's run."""
    return f"[Child task {child.id} ({child.deployment}) ended] {outcome_text(child)}"
