"""Rollover: what trimming is about to drop from a conversation is folded into a running summary
(seed 000 §1.8, ``x-agen/config.json`` ``rollover``).

Without it, a long conversation loses its oldest turns silently once they no longer fit
``contextTokens``. With it, before a model call whose request would drop earlier messages, one
extra call to the agent's own provider (``rollover.model`` or the harness's model; the same
one-off call the reviewer makes) folds that chunk into the conversation's summary. The summary
and how far it reaches (``conversations.summary`` / ``summarized_through``, the seq of the newest
folded message) are checkpointed with the call's usage and spans in one epoch-checked
transaction, so a resumed run never summarises the same chunk twice, and every later request
starts with the summary as a user note ("[Earlier conversation summary]"). The Store keeps every
message whole: rollover changes what reaches the model, never what is stored.

A summarisation call that fails (or answers nothing) logs a warning and the chunk is dropped
without a summary, as trimming did before rollover existed: it is optional and never fails the
run. The same chunk is not tried again in this run.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from agen.bundle.config import Rollover
from agen.runner.context import Msg
from agen.runner.providers import Account
from agen.runner.providers.base import ModelRequest
from agen.runner.state import RunState
from agen.runner.turn import CallSpan, TurnFailed, TurnPolicy, model_turn
from agen.store.base import Store, Tx, now_ms

log = logging.getLogger("agen.runner")

ROLE = "rollover"  # agen.role of its spans
PROMPT = (
    "You keep the running summary of a long conversation between a user and an AI agent. Older "
    "messages no longer fit in the agent's context; fold them into the summary so the agent keeps "
    "what matters: the user's goals and constraints, decisions and their reasons, facts learned, "
    "names, numbers and identifiers, what was done and what is still open. Answer with only the "
    "new summary, as plain prose or short bullets, at most about 400 words."
)
CHUNK_CHARS = 2000  # each message's text as the summariser sees it, at most


async def fold(
    st: RunState,
    spec: Rollover,
    accounts: list[Account],
    policy: TurnPolicy,
    store: Store,
    temperature: float | None,
) -> None:
    """Fold the earlier messages this turn's request would drop into the summary (when there are
    any and this run has not failed to summarise them already), and checkpoint it."""
    chunk = st.ctx.to_fold()
    if not chunk or chunk[-1].seq <= st.rollover_failed_through or not accounts:
        return
    if spec.model:
        accounts = [replace(accounts[0], models=[spec.model])]
    system = spec.prompt or PROMPT
    request = ModelRequest(
        model="",
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": _transcript(st.ctx.summary, chunk)},
        ],
        temperature=temperature,
        run_id=st.run_id,
        run_turn=st.turn,
    )
    t0 = now_ms()
    try:
        answer = await model_turn(accounts, request, policy)
    except TurnFailed as e:
        _spans(st, e.spans)
        _give_up(st, chunk, e.message)
        return
    _spans(st, answer.spans)
    resp = answer.response
    st.add_usage(answer.account.label, resp.model or answer.model_sent, resp.usage)
    summary = (resp.text or "").strip()
    if not summary:
        _give_up(st, chunk, "the model answered with no text")
        return
    through = chunk[-1].seq
    st.add_span(
        "agen.rollover",
        "ok",
        {"agen.rollover.messages": len(chunk), "agen.rollover.through": through},
        t0,
        now_ms(),
    )
    conversation = st.conversation_id

    def save(tx: Tx) -> None:
        tx.execute(
            "UPDATE conversations SET summary = ?, summarized_through = ?, updated_ms = ?"
            " WHERE id = ? AND summarized_through < ?",
            (summary, through, now_ms(), conversation, through),
        )

    await st.flush(store, also=save)
    st.ctx.fold(summary, through)
    await st.emit({"type": "rollover", "turn": st.turn, "messages": len(chunk), "through": through})


def _transcript(summary: str, chunk: list[Msg]) -> str:
    """The summary so far and the messages to fold in, as the summariser reads them."""
    lines = [f"## Summary so far\n\n{summary or '(none yet)'}", "## Messages to fold in"]
    for m in chunk:
        text = (m.content or "").strip()
        if m.tool_calls:
            names = ", ".join(str(c.get("name")) for c in m.tool_calls)
            text = f"{text}\n(called {names})".strip()
        who = f"tool {m.name}" if m.role == "tool" else m.role
        lines.append(f"[{who}] {text[:CHUNK_CHARS]}")
    return "\n\n".join(lines)


def _give_up(st: RunState, chunk: list[Msg], why: str) -> None:
    st.rollover_failed_through = chunk[-1].seq
    log.warning(
        "run %s: rollover could not summarise %d earlier message(s) of conversation %s (%s); "
        "they are dropped from the request without a summary",
        st.run_id,
        len(chunk),
        st.conversation_id,
        why,
    )


def _spans(st: RunState, spans: list[CallSpan]) -> None:
    for s in spans:
        st.add_span(
            "gen_ai.chat",
            s.status,
            {**s.attrs, "agen.turn": st.turn, "agen.role": ROLE},
            s.started_ms,
            s.ended_ms,
            s.error,
        )
