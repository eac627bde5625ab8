"""Scenario windows, regime timelines and trading calendars.

A scenario's regime timeline is built from its :class:`~.specs.ScenarioSpec`: each market's legs
are laid end to end from ``history_start``, clipped to the window, and every market shock
(scope ``crypto``, ``us`` or ``all``) is carved out of the legs it falls into. Symbol-scoped
shocks do not carve anything; they are overlays. Within one market the resulting segments tile
``[history_start, end)`` without gaps or overlaps.

US bars exist only inside regular NYSE sessions taken from ``exchange_calendars`` (XNYS), which
supplies holidays, early closes and the daylight-saving shift of the session in UTC.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import exchange_calendars as xcals
import pandas as pd

from benchmark.market.clock import as_utc
from benchmark.market.universe import Market

from .specs import HISTORY_DAYS, Leg, Regime, ScenarioSpec, Shock

BAR = pd.Timedelta(minutes=15)
"""Bar length of every scenario."""

BAR_INTERVAL = "15min"


def iso(ts: pd.Timestamp) -> str:
    """Format a UTC timestamp as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return as_utc(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Window:
    """Bars run from ``history_start``; decisions from ``start``; both end before ``end``."""

    history_start: pd.Timestamp
    start: pd.Timestamp
    end: pd.Timestamp

    @classmethod
    def of(cls, spec: ScenarioSpec, days: int | None = None) -> Window:
        """The window of ``spec``, optionally shortened to ``days`` days of decisions."""
        span = spec.days if days is None else days
        if not 1 <= span <= spec.days:
            raise ValueError(
                f"days must be between 1 and {spec.days} for {spec.name!r}, got {span}"
            )
        start = as_utc(spec.start)
        if start != start.normalize():
            raise ValueError(f"scenario {spec.name!r} must start at 00:00 UTC, got {start}")
        return cls(start - pd.Timedelta(days=HISTORY_DAYS), start, start + pd.Timedelta(days=span))


@dataclass(frozen=True)
class Segment:
    """A stretch ``[start, end)`` of one regime for ``scope`` (a market, ``all`` or a symbol)."""

    start: pd.Timestamp
    end: pd.Timestamp
    scope: str
    regime: Regime
    move: float
    vol: float
    description: str
    headline: str | None = None

    @property
    def hours(self) -> float:
        return (self.end - self.start) / pd.Timedelta(hours=1)

    def to_json(self) -> dict[str, Any]:
        """The meta-file form of this segment."""
        entry: dict[str, Any] = {
            "start": iso(self.start),
            "end": iso(self.end),
            "scope": self.scope,
            "regime": self.regime,
            "description": self.description,
            "move": round(self.move, 6),
        }
        if self.headline is not None:
            entry["headline"] = self.headline
        return entry


@dataclass(frozen=True)
class Timeline:
    """The carved regime segments of both markets, the symbol overlays and the live shocks."""

    window: Window
    crypto: tuple[Segment, ...]
    us: tuple[Segment, ...]
    overlays: tuple[Segment, ...]
    shocks: tuple[Shock, ...]

    def market(self, market: Market) -> tuple[Segment, ...]:
        """Segments tiling ``market``'s bars."""
        return self.crypto if market == "crypto" else self.us

    def regime_entries(self) -> list[dict[str, Any]]:
        """All segments as meta entries, each ``all``-scoped shock listed once, by start time."""
        seen: set[tuple[pd.Timestamp, str]] = set()
        entries: list[Segment] = []
        for segment in (*self.crypto, *self.us, *self.overlays):
            key = (segment.start, segment.scope)
            if segment.scope == "all" and key in seen:
                continue
            seen.add(key)
            entries.append(segment)
        order = {"crypto": 0, "us": 1, "all": 2}
        entries.sort(key=lambda s: (s.start, order.get(s.scope, 3), s.scope))
        return [s.to_json() for s in entries]


def shock_end(shock: Shock) -> pd.Timestamp:
    """End of a shock's regime window."""
    return as_utc(shock.at) + pd.Timedelta(hours=shock.hours)


def _lay_legs(legs: tuple[Leg, ...], scope: Market, window: Window) -> list[Segment]:
    """Place legs end to end from ``history_start`` and clip them to the window."""
    segments: list[Segment] = []
    begin = window.history_start
    for leg in legs:
        until = as_utc(leg.until)
        if until <= begin:
            raise ValueError(f"leg ending {until} does not come after {begin}")
        end = min(until, window.end)
        if begin < end:
            share = (end - begin) / (until - begin)
            segments.append(
                Segment(begin, end, scope, leg.regime, leg.move * share, leg.vol, leg.description)
            )
        begin = until
    if begin < window.end:
        raise ValueError(f"{scope} legs stop at {begin}, before the window ends at {window.end}")
    return segments


def _carve(segments: list[Segment], hole: Segment) -> list[Segment]:
    """Cut ``hole`` out of ``segments`` (moves shrink in proportion) and insert it."""
    carved: list[Segment] = []
    for seg in segments:
        if seg.end <= hole.start or seg.start >= hole.end:
            carved.append(seg)
            continue
        total = seg.end - seg.start
        for lo, hi in ((seg.start, hole.start), (hole.end, seg.end)):
            if lo < hi:
                carved.append(replace(seg, start=lo, end=hi, move=seg.move * ((hi - lo) / total)))
    carved.append(hole)
    carved.sort(key=lambda s: s.start)
    return carved


def _shock_segment(shock: Shock, window: Window) -> Segment:
    start = as_utc(shock.at)
    return Segment(
        start,
        min(shock_end(shock), window.end),
        shock.scope,
        "shock",
        0.0,
        1.0,
        shock.details,
        shock.headline,
    )


def build_timeline(spec: ScenarioSpec, days: int | None = None) -> Timeline:
    """Regime segments of ``spec`` (optionally shortened to ``days`` decision days)."""
    window = Window.of(spec, days)
    live = tuple(s for s in spec.shocks if as_utc(s.at) < window.end)
    for shock in live:
        if as_utc(shock.at) < window.history_start:
            raise ValueError(f"shock at {shock.at} is before the bars begin")
    markets: dict[Market, list[Segment]] = {
        "crypto": _lay_legs(spec.crypto_legs, "crypto", window),
        "us": _lay_legs(spec.us_legs, "us", window),
    }
    overlays: list[Segment] = []
    for shock in live:
        segment = _shock_segment(shock, window)
        if shock.scope in ("crypto", "us", "all"):
            for market, segments in markets.items():
                if shock.scope in (market, "all"):
                    markets[market] = _carve(segments, segment)
        else:
            overlays.append(segment)
    return Timeline(window, tuple(markets["crypto"]), tuple(markets["us"]), tuple(overlays), live)


@lru_cache(maxsize=8)
def _xnys(first: str, last: str) -> xcals.ExchangeCalendar:
    with warnings.catch_warnings():
        # exchange_calendars reads ``Series.values`` on tz-aware columns, which pandas 3.1
        # deprecates; the values it gets are still the correct UTC nanoseconds.
        warnings.filterwarnings("ignore", message="Series.values returning an ndarray")
        return xcals.get_calendar("XNYS", start=first, end=last)


def nyse_calendar(start: pd.Timestamp, end: pd.Timestamp) -> xcals.ExchangeCalendar:
    """The XNYS calendar covering ``[start, end)`` with a week of margin on both sides."""
    first = (as_utc(start) - pd.Timedelta(days=7)).strftime("%Y-%m-%d")
    last = (as_utc(end) + pd.Timedelta(days=7)).strftime("%Y-%m-%d")
    return _xnys(first, last)


def nyse_sessions(start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Regular NYSE sessions wholly inside ``[start, end)`` (UTC columns ``open``, ``close``)."""
    schedule = nyse_calendar(start, end).schedule
    inside = (schedule["open"] >= as_utc(start)) & (schedule["close"] <= as_utc(end))
    return schedule.loc[inside, ["open", "close"]].reset_index(drop=True)


def nyse_holidays(start: pd.Timestamp, end: pd.Timestamp) -> dict[pd.Timestamp, str]:
    """Weekday dates in ``[start, end)`` with no NYSE session, mapped to the holiday's name."""
    calendar = nyse_calendar(start, end)
    first, last = as_utc(start).tz_localize(None), as_utc(end).tz_localize(None)
    named = calendar.regular_holidays.holidays(first, last, return_name=True)
    names = {pd.Timestamp(day): str(name) for day, name in named.items()}
    sessions = set(calendar.sessions_in_range(first.normalize(), last.normalize()))
    days = pd.date_range(first.normalize(), last, freq="D", inclusive="left")
    return {
        day: names.get(day, "exchange holiday")
        for day in days
        if day.day_of_week < 5 and day not in sessions
    }


def crypto_bar_times(window: Window) -> pd.DatetimeIndex:
    """Open times of the round-the-clock crypto bars."""
    times = pd.date_range(window.history_start, window.end, freq=BAR, inclusive="left")
    return times.astype("datetime64[ns, UTC]")


def us_bar_times(sessions: pd.DataFrame) -> pd.DatetimeIndex:
    """Open times of the 15-minute bars inside the given sessions."""
    parts = [
        pd.date_range(row.open, row.close, freq=BAR, inclusive="left")
        for row in sessions.itertuples(index=False)
    ]
    if not parts:
        return pd.DatetimeIndex([], dtype="datetime64[ns, UTC]")
    return parts[0].append(parts[1:]).astype("datetime64[ns, UTC]")
