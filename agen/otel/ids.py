"""agen ids (ULIDs) as OpenTelemetry ids, and W3C ``traceparent`` in and out.

A ULID is 128 bits, exactly an OTel trace id: a trace id is the ULID's integer in 32 hex digits,
and a span id its low 64 bits (the ULID's random part). An incoming traceparent is stored the
other way round (its trace id and parent span id written as ULID text), so the mapping is
lossless both ways and every id column keeps one shape. No OpenTelemetry import here: the
runner uses it for the traceparent it hands to tools.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agen.errors import InvalidError
from agen.util.ulid import CROCKFORD

if TYPE_CHECKING:
    from ulid import ULID

# W3C trace-context version 00: lower-case hex, trace and span ids not all zeros. The API model
# uses the same pattern (with Python's regex engine, for the look-aheads), so the OpenAPI schema
# says exactly what is accepted.
TRACEPARENT_PATTERN = r"^00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})$"
TRACEPARENT = re.compile(TRACEPARENT_PATTERN)


_AS_BASE32 = str.maketrans(CROCKFORD, "0123456789abcdefghijklmnopqrstuv")
_ULID_CHARS = frozenset(CROCKFORD)


def _int(agen_id: str) -> int:
    # agen's own ids (upper-case Crockford, 26 chars) by one translate and int(): python-ulid's parse
    # costs ~10x more, and the runner converts ids for every tool call's traceparent
    if len(agen_id) == 26 and agen_id[0] <= "7" and _ULID_CHARS.issuperset(agen_id):
        return int(agen_id.translate(_AS_BASE32), 32)
    try:
        return int(_ulid().from_str(agen_id))
    except ValueError:  # not a ULID (an id from elsewhere): a stable number from its text
        return int.from_bytes(agen_id.encode()[-16:].rjust(16, b"\0"), "big")


def _ulid() -> type[ULID]:
    """python-ulid, imported on first use: every command loads this module (the API models name its
    pattern), few convert an id that is not agen's own."""
    from ulid import ULID

    return ULID


def trace_int(agen_id: str) -> int:
    return _int(agen_id) or 1  # the all-zero trace id is invalid in OTel


def span_int(agen_id: str) -> int:
    return (_int(agen_id) & 0xFFFF_FFFF_FFFF_FFFF) or 1


def trace_hex(agen_id: str) -> str:
    return f"{trace_int(agen_id):032x}"


def span_hex(agen_id: str) -> str:
    return f"{span_int(agen_id):016x}"


def traceparent(trace_id: str, span_id: str) -> str:
    """The W3C traceparent for an agen span (sampled): what tools and callees see."""
    return f"00-{trace_hex(trace_id)}-{span_hex(span_id)}-01"


def check_traceparent(value: str, where: str = "traceparent") -> str:
    """The value if it is a valid W3C traceparent, else InvalidError naming ``where``."""
    if TRACEPARENT.fullmatch(value.strip()) is None:
        raise InvalidError(
            f"{where}: {value[:80]!r} is not a W3C traceparent; send 00-<32 hex trace id>-<16 hex span id>-<flags>",
            field=where,
        )
    return value.strip()


def received_traceparent(value: object) -> str | None:
    """A traceparent a caller sent, when it is valid; anything else (all-zero ids, another shape,
    not a string) is ignored and the run starts its own trace, as W3C trace-context asks of a
    receiver (§4.3), instead of refusing the call."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return check_traceparent(value)
    except InvalidError:
        return None


def header_traceparent(headers: Mapping[str, str]) -> str | None:
    """The request's ``traceparent`` header when it is valid (``received_traceparent``)."""
    return received_traceparent(
        next((v for k, v in headers.items() if k.lower() == "traceparent"), None)
    )


_SPAN_RANDOM = random.Random(os.urandom(32))  # private, as agen.store.base's ULIDs are
os.register_at_fork(after_in_child=lambda: _SPAN_RANDOM.seed(os.urandom(32)))


def w3c_span_id() -> str:
    """A new span id that survives a traceparent round trip unchanged (its high 64 bits are zero,
    so ``from_traceparent`` gives back this exact id): for spans a callee's run hangs under. Its 64
    bits come from a private ``random`` seeded from os.urandom, not a getrandom() syscall per call:
    ids need uniqueness, not secrecy, and a syscall gives up the GIL to a busy Store writer."""
    return str(_ulid().from_int(_SPAN_RANDOM.getrandbits(64) or 1))


def from_traceparent(value: str) -> tuple[str, str]:
    """(trace id, parent span id) as agen stores them (ULID text) for a valid traceparent."""
    m = TRACEPARENT.fullmatch(check_traceparent(value))
    assert m is not None
    return str(_ulid().from_int(int(m.group(1), 16))), str(_ulid().from_int(int(m.group(2), 16)))


def agen_trace_id(value: str) -> str:
    """A trace id as the user may type it (32 hex digits, as Jaeger shows it) in agen's form."""
    if re.fullmatch(r"[0-9a-fA-F]{32}", value):
        return str(_ulid().from_int(int(value, 16)))
    return value
