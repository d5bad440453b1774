"""Transcript: a run's conversation; tool calls folded (enter expands), usage per turn; follows a
running run live (messages are not events, so only this view, only while its run runs, re-reads),
and shows the answer of the model call in progress as it streams (the run's live events, below the
conversation, until its turn is in the record)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from agen.api import registry as r
from agen.errors import AgenError
from agen.render.observe import feedback_line, run_ending, usage_line
from agen.tui import fmt
from agen.tui.screens.base import AgenScreen
from agen.wire.memory import Artifact, ListArtifactsRequest
from agen.wire.observe import GetTranscriptRequest, ListRunsRequest, Run, TranscriptMessage

if TYPE_CHECKING:
    from agen.wire.feedback import Feedback
    from agen.wire.signals import Event

FOLLOW_S = 1.0
ARTIFACT_ID_CHARS = len("sha256:") + 12


class TranscriptScreen(AgenScreen):
    WATCHES = ("run.finished",)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "expand_all", "Expand all"),
        Binding("O", "collapse_all", "Fold all"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.run: Run | None = None
        self.last_seq = 0
        self.follow: Timer | None = None
        self.calls: dict[str, TreeNode[str]] = {}
        self.shown_target: str | None = None
        self.artifacts: list[Artifact] = []
        self.feedback: list[Feedback] = []
        self.live_run: str | None = None  # the run whose live events are followed
        self.live_text = ""  # the answer of its model call in progress, as streamed so far
        self.live_done = False  # that call ended: its turn shows once the transcript has it

    def body(self) -> ComposeResult:
        yield Static("", id="transcript-head", classes="detail")
        yield Tree("conversation", id="transcript")
        yield Static("", id="transcript-live")

    def on_mount(self) -> None:
        self.query_one(Tree).show_root = False

    def outdated(self) -> bool:
        following = self.run is not None and self.run.finished_ms is None
        return super().outdated() or following or self.agen.target != self.shown_target

    def changed(self, events: list[Event]) -> None:
        """Only when its run finished (or any run, while showing the latest one)."""
        run_id = self.run.id if self.run is not None else None
        if self.agen.target is None or any(e.run_id == run_id for e in events):
            self.reload()

    async def load(self) -> None:
        """The whole conversation when the run changed; otherwise only the messages after the last shown."""
        target = shown = self.agen.target
        try:
            if target is None:
                runs = (await self.client.call(r.ListRuns, ListRunsRequest(limit=1))).runs
                if not runs:
                    self.query_one("#transcript-head", Static).update(
                        "No runs yet. Run a task (Fleet: n), then press r."
                    )
                    return
                target = runs[0].id
            same = self.run is not None and target in (self.run.id, self.run.task_id)
            resp = await self.client.call(
                r.GetTranscript,
                GetTranscriptRequest(id=target, after_seq=self.last_seq if same else 0),
            )
            if (
                same and self.run is not None and resp.run.id != self.run.id
            ):  # a new attempt: a new run
                resp = await self.client.call(r.GetTranscript, GetTranscriptRequest(id=target))
                same = False
            if (
                not same
                or resp.run.finished_ms is None
                or self.run is None
                or self.run.finished_ms is None
            ):
                self.artifacts = (
                    await self.client.call(
                        r.ListArtifacts,
                        ListArtifactsRequest(namespace=resp.run.namespace, run_id=resp.run.id),
                    )
                ).artifacts
        except Exception as e:
            self.failed(e, f"loading the transcript of {target}")
            return
        self.shown_target = shown
        if not same:
            self.query_one(Tree).clear()
            self.calls = {}
            self.last_seq = 0
        self.run = resp.run
        self.feedback = resp.feedback
        self._add(resp.messages)
        self._head()

    def _head(self) -> None:
        run = self.run
        if run is None:
            return
        live = " · following live" if run.finished_ms is None else ""
        self.query_one("#transcript-head", Static).update(
            f"run {fmt.short_id(run.id)} · {run.deployment} · task {fmt.short_id(run.task_id)} · {run.status} · "
            f"{run.turns} turns · "
            f"tokens {run.usage.input_tokens}/{run.usage.output_tokens} · ${run.usage.cost_usd:.4f}{live}"
            # why a failed or cancelled run ended, the line `agen transcript` ends with, wrapped here
            + (f"\n[b red]── {escape(ending)} ──[/b red]" if (ending := run_ending(run)) else "")
            + artifacts_line(self.artifacts)
            + (
                f"\n{escape(feedback_line(self.feedback[-1]))}" if self.feedback else ""
            )  # notes are not markup
            + (f" (+{len(self.feedback) - 1} more)" if len(self.feedback) > 1 else "")
        )
        if self.follow is None:
            self.follow = self.set_interval(FOLLOW_S, self._tick, pause=True)
        if run.finished_ms is None:
            self.follow.resume()
            if self.live_run != run.id and run.task_id:
                self.live_run = run.id
                # group "tail": lives as long as the screen shows the running run, as a log tail
                self.run_worker(self._follow_live(run), group="tail", exclusive=True)
        else:
            self.follow.pause()
            self._stop_live()

    def _stop_live(self) -> None:
        self.workers.cancel_group(self, "tail")
        self.live_run = None
        self._show_live("")

    def _show_live(self, text: str, done: bool = False) -> None:
        self.live_text, self.live_done = text, done
        live = self.query_one("#transcript-live", Static)
        live.update(Text(f"assistant · writing…\n{text}") if text else "")
        live.display = bool(text)

    async def _follow_live(self, run: Run) -> None:
        """The run's model calls as they stream; best effort (the re-read every second goes on)."""
        assert run.task_id is not None
        try:
            async with self.client.live(run.namespace, run.task_id) as events:
                async for event in events:
                    data = event.get("data") or {}
                    if event.get("run_id") != run.id:
                        continue
                    kind = event.get("type")
                    if kind == "model.started":
                        self._show_live("")
                    elif kind == "run.delta" and data.get("kind") == "text":
                        self._show_live(self.live_text + str(data.get("text") or ""))
                    elif kind == "model.finished":
                        self._show_live(self.live_text, done=True)
                        self.reload()
        except AgenError:
            return

    def _add(self, messages: list[TranscriptMessage]) -> None:
        tree = self.query_one(Tree)
        if self.live_done and any(m.role == "assistant" for m in messages):
            self._show_live("")  # the streamed turn is in the record now
        for m in messages:
            self.last_seq = max(self.last_seq, m.seq)
            if m.role == "tool":
                parent = self.calls.get(m.tool_call_id or "")
                label = Text(
                    f"← result{' (error)' if m.is_error else ''}: {_one_line(m.content)}",
                    style="red" if m.is_error else "green",
                )
                target = parent if parent is not None else tree.root
                node = target.add(label, data=m.content or "")
                node.add_leaf(Text(m.content or ""))
                continue
            if m.role == "assistant":
                head = Text(
                    f"{'reviewer' if m.name == 'reviewer' else 'assistant'} · {usage_line(m)}",
                    style="cyan",
                )
            else:
                head = Text(m.role, style="bold blue" if m.role == "user" else "magenta")
            node = tree.root.add(head, expand=True)
            if m.content:
                node.add_leaf(Text(m.content))
            for call in m.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                folded = node.add(
                    Text(f"→ {call.name}({_one_line(args)})", style="yellow"), data=call.id
                )
                folded.add_leaf(Text(args))
                self.calls[call.id] = folded

    def _tick(self) -> None:
        if self.run is not None and self.run.finished_ms is None:
            self.reload()  # only the new messages; never alongside another load

    def on_screen_suspend(self) -> None:
        if self.follow is not None:
            self.follow.pause()
        self._stop_live()  # followed again when the screen shows its running run

    def action_expand_all(self) -> None:
        self.query_one(Tree).root.expand_all()

    def action_collapse_all(self) -> None:
        for node in self.query_one(Tree).root.children:
            for child in node.children:
                child.collapse()


def artifacts_line(artifacts: list[Artifact]) -> str:
    """The run's saved artifacts: name, size, and an id prefix `agen artifacts get` takes."""
    if not artifacts:
        return ""
    shown = ", ".join(
        f"{a.name} ({_size(a.size)}, {a.id[:ARTIFACT_ID_CHARS]})" for a in artifacts[:5]
    )
    more = f" and {len(artifacts) - 5} more (agen artifacts ls)" if len(artifacts) > 5 else ""
    return f"\nartifacts: {shown}{more}"


def _size(n: int) -> str:
    for unit, step in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= step:
            return f"{n / step:.1f} {unit}"
    return f"{n} B"


def _one_line(text: str | None, width: int = 80) -> str:
    flat = (text or "").replace("\n", " ")
    return flat if len(flat) <= width else flat[: width - 1] + "…"
