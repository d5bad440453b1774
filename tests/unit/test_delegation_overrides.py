"""Overrides down a task tree (seed 000 §5): a child's effective overrides are its parent's combined
with its own, so restrictions accumulate and a descendant never regains what an ancestor gave up."""

from __future__ import annotations

from agen.hub.queue.delegation import combine_overrides


def test_allowlists_intersect_permissions_concatenate_budgets_take_the_smaller() -> None:
    parent = {
        "tools": ["search", "fetch", "finish"],
        "skills": ["cite"],
        "systemAddendum": "Be brief.",
        "permissions": {"deny": ["shell.*"]},
        "budget": {"maxTurns": 10, "maxRunDuration": "5m", "maxUsdPerRun": 0.5},
    }
    child = {
        "tools": ["fetch", "write"],
        "systemAddendum": "Cite sources.",
        "permissions": {"deny": ["net.post"], "ask": ["fetch"]},
        "budget": {"maxTurns": 20, "maxRunDuration": "90s", "maxTokensPerRun": 1000},
    }
    assert combine_overrides(parent, child) == {
        "tools": ["fetch"],
        "skills": ["cite"],
        "systemAddendum": "Be brief.\n\nCite sources.",
        "permissions": {"deny": ["shell.*", "net.post"], "ask": ["fetch"]},
        "budget": {
            "maxTurns": 10,
            "maxRunDuration": "90s",
            "maxTokensPerRun": 1000,
            "maxUsdPerRun": 0.5,
        },
    }


def test_a_side_without_overrides_leaves_the_other_as_it_is() -> None:
    narrow = {"tools": ["finish"]}
    assert combine_overrides(None, narrow) == narrow
    assert combine_overrides(narrow, None) == narrow
    assert combine_overrides(None, None) is None
