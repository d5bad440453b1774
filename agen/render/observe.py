"""Rich renderings of runs, transcripts, traces and task queries: shared by the CLI, TUI and docs."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

if TYPE_CHECKING:
    from agen.wire.feedback import Feedback
    from agen.wire.observe import (
        GetTraceResponse,
        GetTranscriptResponse,
        QueryTaskResponse,
        Run,
        Span,
        TranscriptMessage,
    )

BAR = 32
LABEL = 46
TOOL_RESULT_CHARS = 2000


def duration(ms: int | None) -> str:
    if ms is None:
        return "…"
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    return f"{ms // 60_000}m{(ms % 60_000) // 1000:02d}s"


def money(usd: float) -> str:
    return f"${usd:.4f}" if usd else "-"


def activity_text(word: str, reason: str | None = None) -> Text:
    style = {
        "working": "green",
        "needs": "bold yellow",
        "stopped": "red",
        "failing": "bold red",
        "idle": "dim",
    }.get(word, "")
    if word == "needs" and reason:  # what it needs, said as a phrase: needs approval
        return Text(f"{word} {reason}", style=style)
    return Text(f"{word} ({reason})" if reason else word, style=style)


def waiting_text(waiting_on: str | None) -> str | None:
    """The activity word's detail for a deployment working through a delegate it waits on."""
    return f"waiting on a {waiting_on}" if waiting_on else None


RUN_COLUMNS = (
    "RUN",
    "DEPLOYMENT",
    "TASK",
    "STATUS",
    "ACTIVITY",
    "TURNS",
    "TOKENS",
    "COST",
    "TOOK",
    "SOURCE",
    "FEEDBACK",
)


def feedback_cell(r: Run) -> str:
    """The latest score, and how many ratings when more than one (mean in the JSON)."""
    f = r.feedback
    if f is None:
        return "-"
    return f"{f.last_score:+.2f}" + (f" ({f.count})" if f.count > 1 else "")


def runs_rows(runs: list[Run], *, roots: bool = False) -> list[list[str | Text]]:
    """`agen runs` rows, under RUN_COLUMNS."""
    rows: list[list[str | Text]] = []
    for r in runs:
        u = r.tree_usage if roots and r.tree_usage else r.usage
        took = (r.finished_ms - r.started_ms) if r.finished_ms else None
        extra = f" ({r.tree_runs} runs)" if roots and (r.tree_runs or 0) > 1 else ""
        status = Text(r.status, style=_status_style(r.status))
        if r.effect_unknown:
            status.append(", effect unknown", style="bold yellow")
        rows.append(
            [
                r.id,
                r.deployment,
                r.task_id or "-",
                status,
                activity_text(r.activity, r.stopped_reason or r.needs),
                str(r.turns),
                f"{u.input_tokens}/{u.output_tokens}",
                money(u.cost_usd) + extra,
                duration(took),
                r.source,
                feedback_cell(r),
            ]
        )
    return rows


def _status_style(status: str) -> str:
    return {
        "failed": "red",
        "error": "red",
        "cancelled": "yellow",
        "waiting_approval": "bold yellow",
        "succeeded": "green",
        "ok": "green",
        "running": "cyan",
        "unfinished": "cyan",
    }.get(status, "")


def _args(arguments: Any) -> str:
    return (
        json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments is not None else ""
    )


def usage_line(m: TranscriptMessage) -> str:
    u = m.usage or {}
    parts = [f"turn {m.turn}"] if m.turn else []
    if m.model:
        parts.append(f"model {m.model}")
    tin = u.get("input_tokens", u.get("inputTokens"))
    tout = u.get("output_tokens", u.get("outputTokens"))
    if tin is not None or tout is not None:
        parts.append(f"tokens {tin or 0} in / {tout or 0} out")
    cost = u.get("cost_usd", u.get("costUsd"))
    if cost:
        parts.append(f"${float(cost):.4f}")
    return " · ".join(parts)


def transcript_lines(resp: GetTranscriptResponse) -> list[RenderableType]:
    """One block per message: who, what, tool arguments and results, usage per turn."""
    run = resp.run
    out: list[RenderableType] = [
        Text(
            f"run {run.id} · {run.deployment} · task {run.task_id or '-'} · {run.status} · "
            f"{run.turns} turns · tokens {run.usage.input_tokens} in / {run.usage.output_tokens} out · "
            f"{money(run.usage.cost_usd)}",
            style="bold",
        )
    ]
    for f in resp.feedback:
        out.append(
            Text(
                feedback_line(f),
                style="bold green" if f.score > 0 else "bold red" if f.score < 0 else "bold",
            )
        )
    if resp.system is not None:
        out += [Text("── system ──", style="magenta"), Text(resp.system)]
    for m in resp.messages:
        if m.run_id != run.id:
            head = Text(f"── {m.role} (earlier run {m.run_id}) ──", style="dim")
        elif m.role == "assistant":
            who = "reviewer" if m.name == "reviewer" else "assistant"
            head = Text(
                f"── {who} · {usage_line(m)} ──",
                style="magenta" if m.name == "reviewer" else "cyan",
            )
        elif m.role == "tool":
            head = Text(
                f"── tool result · {m.name or '?'}{' · ERROR' if m.is_error else ''} ──",
                style="red" if m.is_error else "green",
            )
        else:
            head = Text(f"── {m.role} ──", style="bold blue" if m.role == "user" else "magenta")
        out.append(head)
        if m.content:
            body = (
                m.content
                if m.role != "tool" or len(m.content) <= TOOL_RESULT_CHARS
                else (m.content[:TOOL_RESULT_CHARS] + f"… ({len(m.content)} characters)")
            )
            out.append(Text(body, style="red" if m.is_error else ""))
        for call in m.tool_calls:
            out.append(Text(f"→ {call.name}({_args(call.arguments)})  [{call.id}]", style="yellow"))
    ending = run_ending(run)
    if ending:
        out.append(Text(f"── {ending} ──", style="bold red"))
    return out


def run_ending(run: Run) -> str | None:
    """Why a run ended failed or cancelled, from its recorded outcome (the last thing a transcript says)."""
    if run.status not in ("failed", "cancelled"):
        return None
    o = run.outcome or {}
    reason, summary = o.get("reason"), o.get("summary") or o.get("error")
    return (
        f"run {run.status}"
        + (f" ({reason})" if reason else "")
        + (f": {summary}" if summary and summary != reason else "")
    )


def feedback_line(f: Feedback) -> str:
    """One line per rating, under the transcript's head (the TUI's transcript screen shows the same)."""
    labels = " ".join(f"{k}={v}" for k, v in sorted(f.labels.items()))
    return (
        f"feedback {f.score:+.2f} by {f.by or '?'}"
        + (f" [{labels}]" if labels else "")
        + (f": {f.note}" if f.note else "")
    )


def _span_label(s: Span) -> str:
    a = s.attrs
    if s.name == "agen.run":
        return f"{s.deployment or '?'} run {(s.run_id or '')[-6:]}"
    if s.name == "gen_ai.chat":
        model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or "?"
        fb = " (fallback)" if a.get("agen.fallback") or a.get("agen.fallback_provider") else ""
        who = " (reviewer)" if a.get("agen.role") == "reviewer" else ""
        return f"chat {model}{fb}{who}"
    if s.name == "agen.review":
        grade = a.get("agen.review.grade")
        return (
            f"review {a.get('agen.review.round', '?')}: {a.get('agen.review.result', s.status)}"
            + (f" (grade {grade})" if grade is not None else "")
        )
    if s.name == "agen.tool":
        return f"tool {a.get('agen.tool.name', '?')}"
    return s.name


def _span_numbers(s: Span) -> str:
    a = s.attrs
    parts = [duration(s.duration_ms)]
    tin, tout = a.get("gen_ai.usage.input_tokens"), a.get("gen_ai.usage.output_tokens")
    if tin is not None or tout is not None:
        parts.append(f"{tin or 0}/{tout or 0} tok")
    if a.get("agen.cost_usd"):
        parts.append(f"${float(a['agen.cost_usd']):.4f}")
    return "  ".join(parts)


def waterfall_bar(s: Span, t0: int, total: int, width: int = BAR) -> str:
    start = int((s.started_ms - t0) / total * width) if total else 0
    end_ms = s.ended_ms if s.ended_ms is not None else t0 + total
    length = max(1, round((end_ms - s.started_ms) / total * width)) if total else 1
    start = min(start, width - 1)
    length = min(length, width - start)
    return "·" * start + "█" * length + "·" * (width - start - length)


def trace_tree(resp: GetTraceResponse) -> Tree:
    """The span tree with a time bar per span: where the time went, across agents."""
    t0 = resp.started_ms
    end = resp.ended_ms or max((s.ended_ms or s.started_ms) for s in resp.spans)
    total = max(1, end - t0)
    kids: dict[str | None, list[Span]] = defaultdict(list)
    ids = {s.id for s in resp.spans}
    for s in resp.spans:
        kids[s.parent_id if s.parent_id in ids else None].append(s)
    u = resp.usage
    root = Tree(
        Text(
            f"trace {resp.trace_id} · {duration(end - t0)} · {len(resp.runs)} runs · "
            f"tokens {u.input_tokens} in / {u.output_tokens} out · {money(u.cost_usd)}"
            + (f" · {resp.errors} failed" if resp.errors else ""),
            style="bold",
        )
    )

    def add(parent: Tree, span: Span, depth: int) -> None:
        failed = span.status in ("error", "interrupted", "cancelled")
        label = _span_label(span)
        pad = max(8, LABEL - 4 * depth)
        line = Text(f"{label[:pad]:<{pad}} ", style="red" if failed else "")
        line.append(
            waterfall_bar(span, t0, total),
            style="red" if failed else _status_style(span.status) or "cyan",
        )
        line.append(f" {_span_numbers(span)}")
        if failed:
            line.append(f"  {span.status}" + (f": {span.error}" if span.error else ""), style="red")
        elif span.attrs.get("agen.suspended"):  # waited (an approval, a child, a hold)
            line.append(f"  suspended ({span.attrs['agen.suspended']})", style="yellow")
        node = parent.add(line)
        for child in kids.get(span.id, []):
            add(node, child, depth + 1)

    for top in kids.get(None, []):
        add(root, top, 1)
    return root


def query_view(q: QueryTaskResponse) -> RenderableType:
    t = q.task
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold")
    rows.add_column()
    rows.add_row("task", f"{t.id} ({t.deployment})")
    rows.add_row("state", Text(t.state, style=_status_style(t.state)))
    if t.wait_reason:
        rows.add_row("waiting", t.wait_reason)
    if t.pending_approvals:
        rows.add_row("approvals", ", ".join(t.pending_approvals))
    if t.progress:
        rows.add_row("progress", json.dumps(t.progress, ensure_ascii=False))
    if q.run is not None:
        r = q.run
        rows.add_row(
            "run",
            f"{r.id} · {r.turns} turns · tokens {r.usage.input_tokens}/{r.usage.output_tokens}"
            f" · {money(r.usage.cost_usd)}",
        )
        rows.add_row("activity", activity_text(r.activity, r.stopped_reason or r.needs))
    if q.now is not None:
        rows.add_row(
            "now",
            f"{q.now.doing}"
            + (f": {q.now.detail}" if q.now.detail else "")
            + f" (since {duration(max(0, _now_ms() - q.now.since_ms))})",
        )
    if t.outcome:
        o = t.outcome
        rows.add_row(
            "outcome", f"{o.get('status', '')}" + (f" ({o['reason']})" if o.get("reason") else "")
        )
        if o.get("summary"):
            rows.add_row("summary", str(o["summary"]))
    if t.error:
        rows.add_row("error", Text(t.error, style="red"))
    for i, f in enumerate(q.feedback):
        rows.add_row("feedback" if i == 0 else "", Text(feedback_line(f).removeprefix("feedback ")))
    return Group(rows)


def _now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000
