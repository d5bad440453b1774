"""Before each model call of a task's run that delegates (or is a child): joined children and
the tree budget (seed 000 §5 "Tree budgets", §6 "Join").

A joined child's end arrives as an inbox row; it becomes a user message in the parent's run,
checkpointed before the row is acknowledged, so a crash in between delivers it again and the
message's marker (the child's id) keeps it from being added twice. While joined children still
run, the run suspends on ``children`` (no lease, no slot) and every child's end wakes it; the
model is asked again once none is left running. A failed check never stops a run (fail-open).
"""

from __future__ import annotations

import logging

from agen.errors import AgenError
from agen.runner.delegation import DelegationPort, result_note
from agen.runner.state import RunState
from agen.store.base import Store

log = logging.getLogger("agen.runner")

CHILDREN = "children"
TREE_BUDGET = "tree_budget"


async def check_turn(port: DelegationPort, st: RunState, store: Store) -> str | None:
    """None: ask the model. ``children``: suspend until a joined child ends. ``tree_budget``: the
    tree's budget is spent and no joined child still runs: end with a report."""
    task_id = st.task_id
    if task_id is None:
        return None
    try:
        check = await port.turn_check(task_id)
    except AgenError as e:
        log.info("task %s: delegation check failed, the run goes on: %s", task_id, e)
        return None
    if check.results:
        seen = {m.content for m in st.ctx.current if m.role == "user" and m.content}
        for r in check.results:
            note = result_note(r.child)
            if note not in seen:
                st.add_message("user", note)
        await st.flush(store)
        try:
            await port.ack_results(task_id, [r.inbox_id for r in check.results])
        except AgenError as e:  # delivered again next time; the marker keeps it single
            log.info("task %s: child results not acknowledged: %s", task_id, e)
    # Joined children first: on a spent tree each of them ends with its own report, and the parent
    # reports last, with their results (ending it first would cancel them: on_parent_end).
    if check.unfinished_children > 0:
        return CHILDREN
    if check.tree_budget_exceeded:
        return TREE_BUDGET
    return None


async def unfinished_children(port: DelegationPort | None, task_id: str | None) -> int:
    """Joined children still running (0 when unknown: the check fails open)."""
    if port is None or task_id is None:
        return 0
    try:
        return (await port.turn_check(task_id)).unfinished_children
    except AgenError:
        return 0
