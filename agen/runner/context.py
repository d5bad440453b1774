"""What the model sees: the system prompt, the conversation's history, and trimming.

The system prompt (agent.md body, preloaded skills in full, the list of other skills) is
the cacheable prefix; late lines (budget notes) follow the history. History from earlier
runs is trimmed oldest-first, starting at a user turn; within the current run, the oldest
long tool results are cut in blocks of eight so the request prefix changes rarely. The
Store always keeps every message whole.

With ``rollover`` on (agen/runner/rollover.py), what trimming is about to drop is first folded
into the conversation's running summary: messages up to ``summarized_through`` (a message seq)
are never sent raw again, and the summary goes before the history as a user note every turn it
is non-empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agen.domain.attachments import IMAGE_TYPES, Attachment
from agen.runner.providers.base import ATTACHMENTS_KEY, THINKING_KEY

CUT_OVER = 600  # tool results longer than this may be cut
CUT_TO = 300
KEEP_LATEST = 4
CUT_BLOCK = 8
UNCUT_TOOLS = ("load_skill",)
SUMMARY_NOTE = "[Earlier conversation summary]\n"


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 4


class MessageRow(NamedTuple):
    """The columns of ``messages`` a run reads back (``Msg.of`` builds its message from them)."""

    seq: int
    turn: int
    role: str
    content: str | None
    run_id: str
    tool_calls: str | None = None  # JSON text
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    model: str | None = None
    raw: str | None = None  # the provider's answer, JSON text: an assistant turn's thinking blocks
    attachments: str | None = None  # JSON text: [Attachment]


@dataclass
class Msg:
    """One stored message, with its wire form built once."""

    seq: int
    turn: int
    role: str
    content: str | None
    run_id: str
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    model: str | None = None
    # reasoning blocks sent back as they came (ModelResponse.thinking)
    thinking: list[dict[str, Any]] | None = None
    # files given with a user message, and their bytes (base64) once read from the artifacts
    attachments: list[Attachment] | None = None
    files: list[dict[str, Any]] | None = None
    _wire: dict[str, Any] | None = field(default=None, repr=False)
    _tokens: int = field(default=-1, repr=False)

    def wire(self) -> dict[str, Any]:
        if self._wire is None:
            w: dict[str, Any] = {"role": self.role, "content": self.content or ""}
            if self.role == "assistant" and self.tool_calls:
                w["content"] = self.content or None
                w["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {
                            "name": c["name"],
                            "arguments": json.dumps(c.get("arguments") or {}),
                        },
                    }
                    for c in self.tool_calls
                ]
            if self.role == "tool":
                w["tool_call_id"] = self.tool_call_id
            if self.role == "assistant" and self.thinking:
                w[THINKING_KEY] = self.thinking
            if self.files:
                w[ATTACHMENTS_KEY] = self.files
            self._wire = w
        return self._wire

    @property
    def tokens(self) -> int:
        if self._tokens < 0:
            self._tokens = (
                estimate_tokens(self.content or "")
                + (estimate_tokens(json.dumps(self.tool_calls)) if self.tool_calls else 0)
                + sum(file_tokens(a) for a in self.attachments or [])
            )
        return self._tokens

    @classmethod
    def of(cls, r: MessageRow) -> Msg:
        """The message of a stored row (its JSON columns decoded)."""
        return cls(
            seq=r.seq,
            turn=r.turn,
            role=r.role,
            content=r.content,
            run_id=r.run_id,
            tool_calls=json.loads(r.tool_calls) if r.tool_calls else None,
            tool_call_id=r.tool_call_id,
            name=r.name,
            is_error=r.is_error,
            model=r.model,
            thinking=stored_thinking(r.raw) if r.role == "assistant" else None,
            attachments=[Attachment.model_validate(a) for a in json.loads(r.attachments)]
            if r.attachments
            else None,
        )


def file_tokens(a: Attachment) -> int:
    """A rough count of the tokens a file costs the model (for trimming): an image about 1,600, a
    PDF about a thousand a page (~50 KB), text a token per four bytes."""
    if a.media_type in IMAGE_TYPES:
        return 1600
    return a.size // 50 if not a.is_text else a.size // 4


def stored_thinking(raw: str | None) -> list[dict[str, Any]] | None:
    """The reasoning blocks of a stored raw answer, which the provider that gave them wants back
    unchanged: the Anthropic Messages API refuses a tool-use turn sent back without the thinking
    (and signature) that preceded it, Gemini 3 one without its parts' thought signatures. So a
    resumed run reads them from the checkpoint (the messages row's raw answer)."""
    if not raw:
        return None
    if '"candidates"' in raw:  # a Gemini answer: its model turn, whole (gemini.py)
        from agen.runner.providers.gemini import stored_parts

        return stored_parts(json.loads(raw))
    if '"thinking' not in raw and '"redacted_thinking' not in raw:
        return None
    content = json.loads(raw).get("content")
    if not isinstance(content, list):
        return None
    blocks = [
        b
        for b in content
        if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
    ]
    return blocks or None


def _cut(msg: Msg) -> dict[str, Any]:
    text = msg.content or ""
    note = (
        f"\n[cut: showing the first {CUT_TO} of {len(text)} characters of the {msg.name} result from turn "
        f"{msg.turn}; call the tool again if you need the rest]"
    )
    return {**msg.wire(), "content": text[:CUT_TO] + note}


@dataclass
class Context:
    """The conversation as the model sees it; ``earlier`` is history from previous runs."""

    system: str
    context_tokens: int
    earlier: list[Msg] = field(default_factory=list)
    current: list[Msg] = field(default_factory=list)
    cut_blocks: int = 0  # how many blocks of eight old tool results are cut (only grows)
    section: str = ""  # re-rendered before each model call (memory blocks, live context)
    _current_tokens: int = 0
    _system_tokens: int = -1
    _current_wire: list[dict[str, Any]] = field(default_factory=list)  # built once per message
    summary: str = ""  # rollover's running summary of what trimming dropped
    summarized_through: int = 0  # the seq of the newest earlier message folded into ``summary``
    _earlier_tokens: int = -1
    _earlier_wire: list[dict[str, Any]] | None = None

    def add(self, msg: Msg) -> None:
        if msg.role == "assistant" and msg.name == "reviewer":
            return  # the reviewer's own answers (agen/runner/review.py) are stored, never shown to the executor
        self.current.append(msg)
        self._current_wire.append(msg.wire())
        self._current_tokens += msg.tokens

    def extend(self, msgs: list[Msg]) -> None:
        for m in msgs:
            self.add(m)

    def messages(self, late: list[str] | None = None) -> list[dict[str, Any]]:
        """The request's messages, trimmed to ``context_tokens``."""
        budget, current, used = self._budgeted()
        system = f"{self.system}\n\n{self.section}" if self.section else self.system
        out = [{"role": "system", "content": system}]
        if self.summary:
            out.append({"role": "user", "content": SUMMARY_NOTE + self.summary})
        out.extend(self._earlier(budget - used))
        out.extend(current)
        if late:
            out.append({"role": "system", "content": "\n".join(late)})
        return out

    def to_fold(self) -> list[Msg]:
        """The earlier messages not yet folded into the summary that this turn's request would drop:
        what rollover summarises before the request is built (none when everything fits)."""
        budget, _, used = self._budgeted()
        kept = self._earlier_start(budget - used)
        return self._unfolded()[:kept]

    def fold(self, summary: str, through: int) -> None:
        """Messages up to seq ``through`` are now in ``summary`` and are not sent raw again."""
        self.summary = summary
        self.summarized_through = through
        self._earlier_tokens = -1
        self._earlier_wire = None

    def _budgeted(self) -> tuple[int, list[dict[str, Any]], int]:
        """(room for everything but the system prompt's section, the current run's messages as
        sent, the tokens they and the system prompt and the summary take)."""
        if self._system_tokens < 0:
            self._system_tokens = estimate_tokens(self.system)
        budget = self.context_tokens - (estimate_tokens(self.section) if self.section else 0)
        used = self._system_tokens + self._current_tokens
        current: list[dict[str, Any]]
        if used > budget or self.cut_blocks:
            current, used = self._cut_current(budget)
        else:
            current = self._current_wire
        if self.summary:
            used += estimate_tokens(SUMMARY_NOTE + self.summary)
        return budget, current, used

    def _cut_current(self, budget: int) -> tuple[list[dict[str, Any]], int]:
        candidates = [
            i
            for i, m in enumerate(self.current)
            if m.role == "tool" and len(m.content or "") > CUT_OVER and m.name not in UNCUT_TOOLS
        ]
        tool_idx = [i for i, m in enumerate(self.current) if m.role == "tool"]
        latest = set(tool_idx[-KEEP_LATEST:])
        candidates = [i for i in candidates if i not in latest]
        target = budget * 2 // 3
        used = self._system_tokens + self._current_tokens
        saved = {
            i: self.current[i].tokens - estimate_tokens(_cut(self.current[i])["content"])
            for i in candidates
        }
        blocks = 0
        cut: set[int] = set()
        while candidates[: blocks * CUT_BLOCK] != candidates and (
            blocks < self.cut_blocks or used > target
        ):
            block = candidates[blocks * CUT_BLOCK : (blocks + 1) * CUT_BLOCK]
            cut.update(block)
            used -= sum(saved[i] for i in block)
            blocks += 1
        self.cut_blocks = max(self.cut_blocks, blocks)
        wire = [_cut(m) if i in cut else m.wire() for i, m in enumerate(self.current)]
        return wire, used

    def _unfolded(self) -> list[Msg]:
        """Earlier messages not folded into the summary (all of them without rollover)."""
        if not self.summarized_through:
            return self.earlier
        return [m for m in self.earlier if m.seq > self.summarized_through]

    def _earlier(self, room: int) -> list[dict[str, Any]]:
        """The newest earlier messages that fit in ``room``, starting at a user turn."""
        earlier = self._unfolded()
        start = self._earlier_start(room)
        if start == 0 and earlier:
            if self._earlier_wire is None:
                self._earlier_wire = [m.wire() for m in earlier]
            return self._earlier_wire
        return [m.wire() for m in earlier[start:]]

    def _earlier_start(self, room: int) -> int:
        """Where the unfolded earlier messages sent start: the newest that fit in ``room``, from a
        user turn (0: all of them; their count: none)."""
        earlier = self._unfolded()
        if not earlier or room <= 0:
            return len(earlier)
        if self._earlier_tokens < 0:
            self._earlier_tokens = sum(m.tokens for m in earlier)
        if self._earlier_tokens <= room and earlier[0].role == "user":
            return 0
        start = len(earlier)
        total = 0
        for i in range(len(earlier) - 1, -1, -1):
            total += earlier[i].tokens
            if total > room:
                break
            start = i
        while start < len(earlier) and earlier[start].role != "user":
            start += 1
        return start
