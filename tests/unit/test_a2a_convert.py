"""How an agen task looks to an A2A caller: states from the outcome, the answer as an artifact."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import Message, Part, TaskState

from agen.errors import InvalidError
from agen.gateway import convert
from agen.wire.tasks import Task


def _task(state: str, outcome: dict[str, Any] | None = None) -> Task:
    return Task(
        id="T1",
        namespace="default",
        deployment="d",
        deployment_id="D1",
        state=state,
        input="hi",
        conversation_key="a2a:user:tok1:ctx",
        outcome=outcome,
        created_ms=1,
        updated_ms=2,
    )


@pytest.mark.parametrize(
    ("state", "outcome", "a2a"),
    [
        ("queued", None, TaskState.TASK_STATE_SUBMITTED),
        ("running", None, TaskState.TASK_STATE_WORKING),
        ("succeeded", {"status": "done", "summary": "ok"}, TaskState.TASK_STATE_COMPLETED),
        ("succeeded", {"status": "partial", "summary": "half"}, TaskState.TASK_STATE_COMPLETED),
        (
            "succeeded",
            {"status": "needs_input", "summary": "which?"},
            TaskState.TASK_STATE_INPUT_REQUIRED,
        ),
        ("succeeded", {"status": "rejected", "summary": "no"}, TaskState.TASK_STATE_REJECTED),
        ("failed", {"status": "failed", "error": "boom"}, TaskState.TASK_STATE_FAILED),
        ("cancelled", None, TaskState.TASK_STATE_CANCELED),
    ],
)
def test_agen_states_and_outcomes_map_to_a2a_states(
    state: str, outcome: dict[str, Any] | None, a2a: int
) -> None:
    assert convert.to_a2a(_task(state, outcome), "ctx").status.state == a2a


def test_the_answer_is_an_artifact_with_structured_data_and_the_outcome_is_in_metadata() -> None:
    task = _task(
        "succeeded",
        {"status": "partial", "reason": "max_turns", "summary": "so far", "data": {"n": 2}},
    )
    out = convert.to_a2a(task, "ctx")
    assert out.id == "T1" and out.context_id == "ctx"
    assert out.artifacts[0].parts[0].text == "so far"
    assert out.artifacts[0].parts[1].data.struct_value["n"] == 2
    assert out.status.message.parts[0].text == "so far"
    assert dict(out.metadata["agen.outcome"]) == {"status": "partial", "reason": "max_turns"}


def test_a_task_belongs_to_the_caller_whose_conversation_key_it_carries() -> None:
    assert convert.context_of(_task("queued"), "user:tok1") == "ctx"
    assert convert.context_of(_task("queued"), "user:tok2") is None


def test_non_text_parts_are_refused_not_dropped() -> None:
    message = Message(
        message_id="m", parts=[Part(text="hi"), Part(url="https://example.com/x.png")]
    )
    with pytest.raises(InvalidError, match="not supported yet: A2A url parts"):
        convert.read_message(message, {})
