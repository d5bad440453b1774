"""Cron schedules as bundles write them: 5-field expressions, descriptors, @every, CRON_TZ=.

Evaluated in UTC unless prefixed ``CRON_TZ=<zone>`` (seed 000 §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from agen.util.duration import parse_duration_ms

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def zone(name: str) -> ZoneInfo:
    """An IANA time zone, or ValueError saying the name is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f'unknown time zone "{name}"; use an IANA name like Europe/Paris or UTC'
        ) from None


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: either a cron expression in a zone, or a fixed interval."""

    text: str
    tz: ZoneInfo
    expr: str | None = None
    every_ms: int | None = None

    def next_after_ms(self, after_ms: int) -> int:
        """The first due time strictly after ``after_ms`` (UTC ms).

        @every intervals are aligned to the Unix epoch, so every Hub replica and every restart
        agrees on the due times.
        """
        if self.every_ms is not None:
            return (after_ms // self.every_ms + 1) * self.every_ms
        assert self.expr is not None
        start = datetime.fromtimestamp(after_ms / 1000, tz=UTC).astimezone(self.tz)
        start = start.replace(microsecond=0)
        nxt: datetime = next(CronSim(self.expr, start))
        ms = int(nxt.timestamp() * 1000)
        if ms <= after_ms:  # same second as after_ms: move one second on
            nxt = next(CronSim(self.expr, start + timedelta(seconds=1)))
            ms = int(nxt.timestamp() * 1000)
        return ms


def parse_schedule(text: str) -> Schedule:
    """Parse a trigger schedule; ValueError says what is wrong and what forms are accepted."""
    rest = text.strip()
    tz = ZoneInfo("UTC")
    if rest.startswith("CRON_TZ="):
        name, _, rest = rest[len("CRON_TZ=") :].partition(" ")
        tz = zone(name)
        rest = rest.strip()
    if rest.startswith("@every"):
        arg = rest[len("@every") :].strip()
        try:
            every = parse_duration_ms(arg)
        except ValueError as e:
            raise ValueError(f"@every needs a duration: {e}") from None
        if every < 1000:
            raise ValueError(f'@every needs at least 1s (got "{arg}")')
        return Schedule(text=text, tz=tz, every_ms=every)
    if rest.startswith("@"):
        if rest not in DESCRIPTORS:
            raise ValueError(
                f'unknown descriptor "{rest}"; use one of {", ".join(DESCRIPTORS)} or @every <duration>'
            )
        rest = DESCRIPTORS[rest]
    fields = rest.split()
    if len(fields) != 5:
        raise ValueError(
            f'"{text}" is not a 5-field cron expression (minute hour day month weekday), '
            "a descriptor like @hourly, or @every 30s"
        )
    try:
        CronSim(rest, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as e:
        raise ValueError(f'"{text}" is not a valid cron expression: {str(e).lower()}') from None
    return Schedule(text=text, tz=tz, expr=rest)
