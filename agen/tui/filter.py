"""The filter box's language: ``key:value`` for what the Hub filters on, ``k=v`` for labels, and free
text matched against every visible column. An unknown key or state is reported, not silently dropped
(a typo that filtered nothing would look like "no tasks")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass
class Filter:
    fields: dict[str, str] = field(default_factory=dict)
    """Canonical key -> value, for the Hub's list call."""
    labels: dict[str, str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    """Free text: every word must appear (case-insensitive) in one of the row's visible cells."""
    problems: list[str] = field(default_factory=list)

    def matches(self, cells: Iterable[object]) -> bool:
        if not self.words:
            return True
        text = " ".join(str(c) for c in cells).lower()
        return all(w in text for w in self.words)

    def describe(self, shown: int, total: int) -> str:
        """The line under the box: what is wrong with the filter, else what it matched."""
        if self.problems:
            return "; ".join(self.problems)
        if self.words:
            return f"{shown} of {total} match {' '.join(self.words)!r}"
        return ""


def parse_filter(
    text: str, keys: Mapping[str, str], states: tuple[str, ...], *, state_key: str = "state"
) -> Filter:
    """``state:running dep:hello team=docs deploy failed`` with ``keys`` mapping each accepted key (and
    alias) to its canonical name; a bare word that is a state filters by state."""
    f = Filter()
    known = ", ".join(sorted({f"{k}:" for k in keys}))
    for word in text.split():
        key, sep, value = word.partition(":")
        if sep and key and not key.startswith(("http", "/")):
            canonical = keys.get(key.lower())
            if canonical is None:
                f.problems.append(f"unknown filter key {key!r} (use {known}, k=v or free text)")
            elif canonical == state_key and value not in states:
                f.problems.append(f"unknown state {value!r} (one of {', '.join(states)})")
            else:
                f.fields[canonical] = value
        elif "=" in word and not word.startswith("="):
            k, _, v = word.partition("=")
            f.labels[k] = v
        elif word in states:
            f.fields[state_key] = word
        else:
            f.words.append(word.lower())
    return f
