"""A task's whole tree (GetTaskTree) as a Textual Tree: each task under its parent, children expanded
and collapsed with enter/space, each label saying state, what the task waits on ("waiting on 3
children"), duration and cost. Used by the Tasks screen (T) and the Trace screen."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from agen.render.tree import ordered, wait_text
from agen.tui import fmt
from agen.wire.tasks import GetTaskTreeResponse, TaskTreeNode

STATE_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "cancelled": "red",
    "expired": "red",
    "running": "bold",
    "leased": "bold",
    "waiting": "yellow",
}


def node_label(n: TaskTreeNode, *, selected: bool = False) -> Text:
    t = n.task
    label = Text()
    label.append(fmt.short_id(t.id), style="bold reverse" if selected else "bold")
    label.append(f"  {t.deployment}  ")
    label.append(t.state, style=STATE_STYLE.get(t.state, ""))
    wait = wait_text(n)
    if wait:
        label.append(f"  · {wait}", style="yellow")
    label.append(f"  · {fmt.duration(n.duration_ms) if n.duration_ms is not None else '-'}")
    label.append(f"  · ${n.cost_usd:.4f}" if n.cost_usd else "  · -", style="dim")
    return label


class TaskTree(Tree[str]):
    """The tree of one task; ``show_tree`` replaces what it shows (node data: the task id)."""

    DEFAULT_CSS = """
    TaskTree {
        height: 1fr;
        border-top: solid $primary;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("no task tree", id=id)
        self.shown: GetTaskTreeResponse | None = None
        """The tree on screen (an unchanged one is not rebuilt, so expanded/collapsed nodes stay)."""

    def show_tree(self, resp: GetTaskTreeResponse, selected: str | None = None) -> None:
        if resp == self.shown:
            return
        self.shown = resp
        self.clear()
        count = len(resp.tasks)
        self.root.set_label(
            Text(f"tree of {fmt.short_id(resp.root_task_id)} · {count} task{'s' * (count != 1)}")
        )
        nodes: dict[str, TreeNode[str]] = {}
        for line in ordered(resp.tasks):
            t = line.node.task
            parent = nodes.get(t.parent_task_id or "", self.root)
            label = node_label(line.node, selected=t.id == selected)
            if line.has_children:
                nodes[t.id] = parent.add(label, data=t.id, expand=True)
            else:
                parent.add_leaf(label, data=t.id)
        self.root.expand()
