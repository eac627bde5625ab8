"""Simulated time: the decision grid and a monotonic clock.

All times are timezone-aware UTC ``pandas.Timestamp`` values. The clock only moves forward; the
market data view and the broker read ``clock.now`` and never anything later.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

UTC = "UTC"


def as_utc(value: object) -> pd.Timestamp:
    """Parse ``value`` as a UTC timestamp (naive values are taken to be UTC)."""
    ts = pd.Timestamp(value)  # type: ignore[arg-type]
    if ts is pd.NaT:
        raise ValueError(f"not a timestamp: {value!r}")
    return ts.tz_localize(UTC) if ts.tzinfo is None else ts.tz_convert(UTC)


@dataclass(frozen=True)
class DecisionGrid:
    """Decision times ``start, start + interval, ...`` strictly before ``end``.

    The default interval is 4 hours, aligned to UTC midnight (00:00, 04:00, ...).
    """

    start: pd.Timestamp
    end: pd.Timestamp
    interval: pd.Timedelta = pd.Timedelta(hours=4)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_utc(self.start))
        object.__setattr__(self, "end", as_utc(self.end))
        object.__setattr__(self, "interval", pd.Timedelta(self.interval))
        if self.interval <= pd.Timedelta(0):
            raise ValueError("decision interval must be positive")
        if self.end <= self.start:
            raise ValueError(f"grid end {self.end} is not after start {self.start}")

    @classmethod
    def aligned(
        cls, start: object, days: float, interval_hours: float = 4.0
    ) -> DecisionGrid:
        """A grid of ``days`` days whose first time is ``start`` rounded up to the interval."""
        interval = pd.Timedelta(hours=interval_hours)
        first = as_utc(start).ceil(interval)
        return cls(first, first + pd.Timedelta(days=days), interval)

    def times(self) -> list[pd.Timestamp]:
        return list(pd.date_range(self.start, self.end, freq=self.interval, inclusive="left"))

    def __len__(self) -> int:
        return len(self.times())


class Clock:
    """A simulated clock that only moves forward."""

    def __init__(self, start: object) -> None:
        self._now = as_utc(start)

    @property
    def now(self) -> pd.Timestamp:
        return self._now

    def advance_to(self, when: object) -> None:
        target = as_utc(when)
        if target < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {target}")
        self._now = target
