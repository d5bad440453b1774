"""Random trigger plans and webhook signature checks (pure functions)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
from datetime import UTC, date, datetime
from typing import Any

from agen.bundle.cron import zone
from agen.bundle.triggers import HmacAuth, RandomTrigger
from agen.hub.auth import bearer_token
from agen.hub.triggers import random as rnd
from agen.hub.triggers.verify import check_bearer, check_hmac


def spec(**kw: Any) -> RandomTrigger:
    base: dict[str, object] = {
        "name": "nudge",
        "type": "random",
        "count": 3,
        "window": "09:00-17:00",
    }
    base.update(kw)
    return RandomTrigger.model_validate(base)


def test_planned_times_are_deterministic_inside_the_window_and_min_gap_apart() -> None:
    s = spec(minGap="1h", zone="Europe/Paris")
    day = date(2025, 6, 2)
    times = rnd.planned_times_ms(s, namespace="ns", deployment="d", day=day)
    assert times == rnd.planned_times_ms(s, namespace="ns", deployment="d", day=day)
    assert times != rnd.planned_times_ms(s, namespace="ns", deployment="other", day=day)
    assert len(times) == 3 and times == sorted(times)
    assert all(b - a >= 3_600_000 - 1000 for a, b in itertools.pairwise(times))
    for t in times:
        local = datetime.fromtimestamp(t / 1000, tz=UTC).astimezone(zone("Europe/Paris"))
        assert local.date() == day and 9 <= local.hour < 17


def test_days_filter_and_a_window_wrapping_past_midnight() -> None:
    s = spec(days=["mon"], window="23:00-01:00", count=2)
    assert (
        rnd.planned_times_ms(s, namespace="ns", deployment="d", day=date(2025, 6, 3)) == []
    )  # a Tuesday
    times = rnd.planned_times_ms(s, namespace="ns", deployment="d", day=date(2025, 6, 2))
    start = int(datetime(2025, 6, 2, 23, tzinfo=UTC).timestamp() * 1000)
    assert all(start <= t <= start + 2 * 3_600_000 for t in times)


def test_next_planned_time_agrees_with_the_plan() -> None:
    s = spec()
    day = date(2025, 6, 2)
    times = rnd.planned_times_ms(s, namespace="ns", deployment="d", day=day)
    assert rnd.next_planned_ms(s, namespace="ns", deployment="d", after_ms=times[0]) == times[1]


def test_bearer_secret_is_compared_by_hash() -> None:
    stored = [hashlib.sha256(b"s3cret").hexdigest()]
    assert bearer_token({"authorization": "Bearer s3cret"}) == "s3cret"
    assert check_bearer("s3cret", stored)
    assert not check_bearer("wrong", stored)
    assert not check_bearer(None, stored)


def test_hmac_signatures_with_header_prefix_algorithm_and_encoding() -> None:
    body = b'{"action":"opened"}'
    gh = HmacAuth(type="hmac", secret="GH_SECRET", header="X-Hub-Signature-256", prefix="sha256=")
    good = "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    assert check_hmac(gh, {"x-hub-signature-256": good}, body, "k") is None
    assert (
        check_hmac(gh, {"X-Hub-Signature-256": good}, body + b" ", "k")
        == "signature does not match the body"
    )
    assert "missing" in str(check_hmac(gh, {}, body, "k"))
    assert "does not start" in str(check_hmac(gh, {"x-hub-signature-256": good[7:]}, body, "k"))
    b64 = HmacAuth(type="hmac", secret="S", algorithm="sha1", encoding="base64")
    sig = base64.b64encode(hmac.new(b"k", body, hashlib.sha1).digest()).decode()
    assert check_hmac(b64, {"X-Signature": sig}, body, "k") is None
