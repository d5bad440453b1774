"""Rollover (seed 000 §1.8): what trimming drops from a long conversation is folded into a running
summary by one extra call to the agent's own provider, checkpointed on the conversation, and sent
before the history every later turn; the Store keeps every message; a failed summary drops the
chunk as trimming did before."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agen.runner.context import SUMMARY_NOTE, Context, Msg
from agen.runner.providers.base import (
    DeltaSink,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ProviderError,
)
from agen.runner.rollover import PROMPT
from agen.runner.types import RunRequest
from tests.runner_helpers import capturing_runner, make, open_store

LONG = "x" * 1200  # ~300 tokens a message: a few turns overflow contextTokens 1000


def _history(n: int) -> list[Msg]:
    out = []
    for i in range(n):
        out.append(Msg(2 * i + 1, i, "user", f"question {i} {LONG}", "old"))
        out.append(Msg(2 * i + 2, i, "assistant", f"answer {i} {LONG}", "old"))
    return out


def test_to_fold_is_what_the_request_would_drop_and_folded_messages_are_never_sent_again() -> None:
    ctx = Context("system", context_tokens=1000, earlier=_history(4))
    ctx.add(Msg(100, 9, "user", "now", "r1"))
    drop = ctx.to_fold()
    sent = [m["content"] for m in ctx.messages()]
    assert drop and drop[0].content is not None and drop[0].content.startswith("question 0")
    assert all(m.content not in sent for m in drop)  # exactly what trimming leaves out
    ctx.fold("the user asked four questions", drop[-1].seq)
    out = ctx.messages()
    assert out[1] == {"role": "user", "content": SUMMARY_NOTE + "the user asked four questions"}
    assert all(m.content not in [o["content"] for o in out] for m in drop)
    assert out[-1]["content"] == "now"


def test_everything_fits_nothing_to_fold_and_no_summary_note() -> None:
    ctx = Context("system", context_tokens=64_000, earlier=_history(2))
    ctx.add(Msg(100, 9, "user", "now", "r1"))
    assert ctx.to_fold() == []
    assert not any(SUMMARY_NOTE in str(m["content"]) for m in ctx.messages())


async def test_a_long_conversation_keeps_a_summary_of_what_trimming_dropped(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    bundle = make({"provider": "fake", "contextTokens": 1000}, {"rollover": {}})
    r, cap = await capturing_runner(store, bundle)
    for i in range(5):
        res = await r.run(RunRequest(input=f"question {i} {LONG}", conversation_key="c"))
        assert res.status == "succeeded"
    folds = [q for q in cap.requests if q.messages[0]["content"] == PROMPT]
    assert folds, "no summarising call was made"
    assert "question 0" in folds[0].messages[1]["content"]  # the oldest chunk is what it folds
    last = cap.requests[-1].messages
    assert last[1]["role"] == "user" and last[1]["content"].startswith(SUMMARY_NOTE)
    raw = [m["content"] for m in last[2:]]
    assert not any(str(c).startswith("question 0") for c in raw)  # never resent raw
    conv = await store.one("SELECT summary, summarized_through FROM conversations")
    assert conv is not None and conv["summary"] and conv["summarized_through"] > 0
    kept = await store.scalar("SELECT COUNT(*) FROM messages WHERE content LIKE 'question 0%'")
    assert kept == 1  # the Store keeps every message whole
    spans = await store.scalar("SELECT COUNT(*) FROM spans WHERE name = 'agen.rollover'")
    assert spans == len(folds)
    await store.close()


async def test_without_rollover_the_oldest_turns_are_just_trimmed(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    r, cap = await capturing_runner(store, make({"provider": "fake", "contextTokens": 1000}))
    for i in range(5):
        await r.run(RunRequest(input=f"question {i} {LONG}", conversation_key="c"))
    assert not [q for q in cap.requests if q.messages[0]["content"] == PROMPT]
    assert not any(SUMMARY_NOTE in str(m["content"]) for m in cap.requests[-1].messages)
    assert await store.scalar("SELECT summary FROM conversations") is None
    await store.close()


class _NoSummaries(ModelProvider):
    """Answers the agent but fails every summarising call (a provider error, for good)."""

    name = "fake"
    default_model = "fake"

    def __init__(self) -> None:
        self.folds = 0

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        if request.messages[0]["content"] == PROMPT:
            self.folds += 1
            raise ProviderError("other", "summaries are down", status=400)
        return ModelResponse(text="ok", finish_reason="stop", model="fake")


async def test_a_failed_summary_drops_the_chunk_with_a_warning_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await open_store(tmp_path)
    bundle = make({"provider": "fake", "contextTokens": 1000, "maxRetries": 0}, {"rollover": {}})
    r, cap = await capturing_runner(store, bundle)
    failing = _NoSummaries()
    cap.inner = failing
    with caplog.at_level(logging.WARNING, logger="agen.runner"):
        for i in range(5):
            res = await r.run(RunRequest(input=f"question {i} {LONG}", conversation_key="c"))
            assert res.status == "succeeded"
    assert failing.folds > 0
    assert "rollover could not summarise" in caplog.text
    assert not any(SUMMARY_NOTE in str(m["content"]) for m in cap.requests[-1].messages)
    assert await store.scalar("SELECT summary FROM conversations") is None
    await store.close()
