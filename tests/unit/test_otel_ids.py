"""agen ids as OpenTelemetry ids: the fast conversion of agen's own ULIDs must give exactly what
python-ulid gives, and anything else must still convert as before."""

from __future__ import annotations

import random

from ulid import ULID

from agen.otel import ids
from agen.store.base import new_ulid


def test_trace_and_span_ids_of_agen_ulids_match_python_ulids_conversion() -> None:
    rng = random.Random(7)
    texts = [new_ulid() for _ in range(500)]
    texts += [str(ULID.from_int(rng.getrandbits(128))) for _ in range(500)]
    for text in texts:
        n = int(ULID.from_str(text))
        assert ids.trace_hex(text) == f"{n or 1:032x}"
        assert ids.span_hex(text) == f"{(n & 0xFFFF_FFFF_FFFF_FFFF) or 1:016x}"


def test_ids_that_are_not_agen_ulids_convert_as_python_ulid_or_their_text_says() -> None:
    lower = "01arz3ndektsv4rrffq69g5fav"  # python-ulid reads lower case too
    assert ids.trace_int(lower) == int(ULID.from_str(lower.upper()))
    too_big = "8" + "0" * 25  # over 128 bits: not a ULID, a stable number from the text
    assert ids.trace_int(too_big) == int.from_bytes(too_big.encode()[-16:], "big")
    assert ids.trace_int("job-42") == int.from_bytes(b"job-42".rjust(16, b"\0"), "big")


def test_a_w3c_span_id_survives_a_traceparent_round_trip_and_is_new_each_time() -> None:
    made = [ids.w3c_span_id() for _ in range(1000)]
    assert len(set(made)) == len(made)
    trace = new_ulid()
    for span in made[:50]:
        assert ids.from_traceparent(ids.traceparent(trace, span)) == (trace, span)
