"""A task tree as the CLI (`agen tree`) and the TUI's Tasks screen show it: a parent, then its children
indented under it, each with state, what it waits on, duration and cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agen.render.observe import duration, money
from agen.wire.tasks import GetTaskTreeResponse, TaskTreeNode

INDENT = "  "


@dataclass(frozen=True)
class TreeLine:
    node: TaskTreeNode
    level: int  # 0 for the root
    has_children: bool


def ordered(nodes: Sequence[TaskTreeNode]) -> list[TreeLine]:
    """Depth first, children in submission order under their parent (the response lists parents first)."""
    ids = {n.task.id for n in nodes}
    children: dict[str | None, list[TaskTreeNode]] = {}
    for n in nodes:
        parent = n.task.parent_task_id if n.task.parent_task_id in ids else None
        children.setdefault(parent, []).append(n)
    out: list[TreeLine] = []

    def walk(n: TaskTreeNode, level: int) -> None:
        kids = children.get(n.task.id, [])
        out.append(TreeLine(n, level, bool(kids)))
        for kid in kids:
            walk(kid, level + 1)

    for top in children.get(None, []):
        walk(top, 0)
    return out


def wait_text(n: TaskTreeNode) -> str:
    """Why a task is not moving: "waiting on 3 children", "held", "wrapping up", a queued task's reason."""
    t = n.task
    if t.state in ("succeeded", "failed", "cancelled", "expired"):
        return ""
    if t.cancel_at_ms is not None:
        return "wrapping up (cancel requested)"
    wait_for = t.wait_for or ""
    if t.state == "waiting" and (wait_for == "children" or wait_for.startswith("child:")):
        count = n.unfinished_children
        return f"waiting on {count} {'child' if count == 1 else 'children'}"
    if t.held or wait_for == "resume":
        return "held"
    if wait_for.startswith("approval:") or t.pending_approvals:
        return "waiting for approval"
    if t.state == "waiting" and wait_for:
        return f"waiting for {wait_for}"
    return t.wait_reason or ""


def tree_rows(resp: GetTaskTreeResponse) -> list[tuple[str, ...]]:
    """(task, deployment, state, wait, duration, cost) per task, the task id indented by its level."""
    return [
        (
            INDENT * line.level + line.node.task.id,
            line.node.task.deployment,
            line.node.task.state,
            wait_text(line.node),
            duration(line.node.duration_ms) if line.node.duration_ms is not None else "-",
            money(line.node.cost_usd),
        )
        for line in ordered(resp.tasks)
    ]


COLUMNS = ("TASK", "DEPLOYMENT", "STATE", "WAIT", "DURATION", "COST")
