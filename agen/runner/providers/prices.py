"""Prices of the models whose API reports tokens but not dollars (Anthropic's, Gemini's), for run
costs and budgets.

USD per million tokens, from Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing,
read 2026-12): base input, 5-minute cache writes (the breakpoints agen places), cache reads, output.
A model id matches with or without its date suffix (claude-haiku-4-5-20251001). A model not listed
has no cost (None), as with a server that reports none: budgets in USD then do not count it.
Batch, fast mode and 1-hour cache prices are not used by agen.

Gemini: USD per million tokens of the Gemini Developer API's standard paid tier (ai.google.dev/
gemini-api/docs/pricing, text/image/video input, read 2026-12): input, context-cache reads, output
(thinking tokens are output). The API caches implicitly and bills no cache writes; a prompt over
200k tokens pays the long rate on the Pro models. A preview or dated id matches its model
(gemini-2.5-flash-preview-09-2025). Audio input and cache storage are not priced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input: float
    cache_write: float
    cache_read: float
    output: float


@dataclass(frozen=True)
class Tiered:
    """A model priced by prompt length: every token of a request over ``over`` prompt tokens
    (input, cache writes and reads) pays ``long``."""

    short: Price
    over: int
    long: Price


_OPUS_NEW = Price(5.0, 6.25, 0.50, 25.0)
_OPUS_OLD = Price(15.0, 18.75, 1.50, 75.0)
_SONNET = Price(3.0, 3.75, 0.30, 15.0)
_SONNET_5 = Price(2.0, 2.50, 0.20, 10.0)
_FABLE = Price(10.0, 12.50, 1.00, 50.0)
_FABLE_1 = Price(10.0, 12.50, 0.25, 50.0)

CLAUDE: dict[str, Price | Tiered] = {
    "claude-fable-5-1": _FABLE_1,
    "claude-mythos-5-1": _FABLE_1,
    "claude-fable-5": _FABLE,
    "claude-mythos-5": _FABLE,
    "claude-opus-5-5": Price(4.0, 5.0, 0.20, 20.0),
    "claude-opus-5": _OPUS_NEW,
    "claude-opus-4-8": _OPUS_NEW,
    "claude-opus-4-7": _OPUS_NEW,
    "claude-opus-4-6": _OPUS_NEW,
    "claude-opus-4-5": _OPUS_NEW,
    "claude-opus-4-1": _OPUS_OLD,
    "claude-opus-4-0": _OPUS_OLD,
    "claude-opus-4": _OPUS_OLD,
    "claude-3-opus": _OPUS_OLD,
    "claude-sonnet-5-5": Price(2.0, 2.50, 0.10, 10.0),
    "claude-sonnet-5": _SONNET_5,
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-haiku-5-5": Tiered(
        Price(0.10, 0.125, 0.01, 0.50), 100_000, Price(0.50, 0.625, 0.05, 2.50)
    ),
    "claude-haiku-4-5": Price(1.0, 1.25, 0.10, 5.0),
    "claude-3-5-haiku": Price(0.80, 1.0, 0.08, 4.0),
    "claude-3-haiku": Price(0.25, 0.30, 0.03, 1.25),
}


def _gemini(input: float, cache_read: float, output: float) -> Price:
    return Price(input, input, cache_read, output)  # no cache-write price: caching is implicit


GEMINI: dict[str, Price | Tiered] = {
    "gemini-3.5-flash": _gemini(1.50, 0.15, 9.00),
    "gemini-3.1-pro-preview": Tiered(
        _gemini(2.00, 0.20, 12.00), 200_000, _gemini(4.00, 0.40, 18.00)
    ),
    "gemini-3.1-flash-lite": _gemini(0.25, 0.025, 1.50),
    "gemini-3-flash-preview": _gemini(0.50, 0.05, 3.00),
    "gemini-2.5-pro": Tiered(_gemini(1.25, 0.125, 10.00), 200_000, _gemini(2.50, 0.25, 15.00)),
    "gemini-2.5-flash": _gemini(0.30, 0.03, 2.50),
    "gemini-2.5-flash-lite": _gemini(0.10, 0.01, 0.40),
}

_DATED = re.compile(r"-\d{8}$")
_GEMINI_VERSION = re.compile(r"(-preview)?(-\d{2}-\d{4}|-\d{3})?$")


def claude_cost(model: str, fresh: int, written: int, read: int, output: int) -> float | None:
    """The USD cost of one call: uncached input, cache writes, cache reads and output, each at its
    price; None for a model not in the table."""
    return _cost(
        CLAUDE.get(_DATED.sub("", model.removeprefix("anthropic/"))), fresh, written, read, output
    )


def gemini_cost(model: str, fresh: int, read: int, output: int) -> float | None:
    """The USD cost of one Gemini call: uncached input, cached input and output (thinking
    included); None for a model not in the table."""
    name = model.removeprefix("models/").removeprefix("google/")
    entry = GEMINI.get(name) or GEMINI.get(_GEMINI_VERSION.sub("", name, count=1))
    return _cost(entry, fresh, 0, read, output)


def _cost(
    entry: Price | Tiered | None, fresh: int, written: int, read: int, output: int
) -> float | None:
    if entry is None:
        return None
    if isinstance(entry, Tiered):
        entry = entry.long if fresh + written + read > entry.over else entry.short
    total = (
        fresh * entry.input
        + written * entry.cache_write
        + read * entry.cache_read
        + output * entry.output
    )
    return round(total / 1_000_000, 10)
