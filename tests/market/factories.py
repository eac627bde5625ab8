"""Small hand-made markets for tests."""

from __future__ import annotations

import pandas as pd

from benchmark.market.data import FrameSource, NewsItem
from benchmark.market.engine import MarketSimulator
from benchmark.market.universe import Universe

TEST_UNIVERSE = Universe(crypto=("BTC", "ETH"), us=("AAPL",))
# a Monday; the NYSE session runs 14:30-21:00 UTC in winter
MONDAY = pd.Timestamp("2026-01-12 00:00", tz="UTC")


def step_source(
    closes: dict[str, list[float]],
    start: pd.Timestamp = MONDAY,
    universe: Universe = TEST_UNIVERSE,
    news: tuple[NewsItem, ...] = (),
) -> FrameSource:
    """15-minute bars whose close follows ``closes[symbol]``; open = previous close.

    The last value of a list is held for as long as the longest list runs.
    """
    length = max(len(v) for v in closes.values())
    rows = []
    for symbol, values in closes.items():
        values = list(values) + [values[-1]] * (length - len(values))
        prev = values[0]
        for i, close in enumerate(values):
            ts = start + pd.Timedelta(minutes=15 * i)
            rows.append(
                {
                    "symbol": symbol, "ts": ts, "open": prev, "high": max(prev, close),
                    "low": min(prev, close), "close": close, "volume": 100.0 + i,
                }
            )
            prev = close
    return FrameSource("test", pd.DataFrame(rows), universe=universe, news_items=news)


def simulator(closes: dict[str, list[float]], start_offset_bars: int = 1, **kwargs) -> MarketSimulator:
    """A simulator whose clock starts after the first ``start_offset_bars`` bars have closed."""
    source = step_source(closes)
    start = MONDAY + pd.Timedelta(minutes=15 * start_offset_bars)
    return MarketSimulator(source, start, **kwargs)
