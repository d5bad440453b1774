"""A run nobody watches does not pay for streaming: the fake model sends its answer in one delta
(the same text) unless a subscriber of the live bus takes the run's deltas, then word by word."""

from __future__ import annotations

from agen.domain.live import LiveBus, LiveEvent
from agen.runner.providers.base import Delta, ModelRequest, WatchedSink
from agen.runner.providers.fake import FakeProvider

PROBE = LiveEvent("run.delta", "default", "bot", "run-1", "t1", {}, 0)
REQUEST = ModelRequest(model="fake", messages=[{"role": "user", "content": "hi there"}])


async def _deltas(bus: LiveBus) -> list[str]:
    seen: list[str] = []

    async def send(d: Delta) -> None:
        seen.append(d.text)

    answer = await FakeProvider().complete(REQUEST, WatchedSink(send, lambda: bus.wants(PROBE)))
    assert "".join(seen) == answer.text == "You said: hi there"
    return seen


async def test_a_run_nobody_watches_gets_the_fake_answer_in_one_delta() -> None:
    bus = LiveBus()
    assert await _deltas(bus) == ["You said: hi there"]
    with bus.subscribe(lambda e: e.run_id == "run-2"):  # someone watching another run
        assert not bus.wants(PROBE)
        assert await _deltas(bus) == ["You said: hi there"]


async def test_a_watched_run_gets_the_fake_answer_word_by_word() -> None:
    bus = LiveBus()
    with bus.subscribe(lambda e: e.run_id == "run-1"):
        assert bus.wants(PROBE)
        assert await _deltas(bus) == ["You ", "said: ", "hi ", "there"]
