"""Market data: sources behind one interface, and the point-in-time view everyone reads.

A *source* holds the full history of bars (and optionally news) for a universe. Nothing outside this
module and the simulation engine touches a source directly: tools, strategies and the broker read
through :class:`PointInTimeData`, which cuts every answer at the clock's ``now``.

Time conventions
----------------
* A bar is stamped with its **open** time ``ts`` and covers ``[ts, ts + interval)``. It becomes
  visible when it has closed, i.e. when ``ts + interval <= now``. A bar still forming at ``now`` is
  never returned, so no price from after ``now`` can leak through a high, low or close.
* The price of a symbol at ``now`` is the close of its latest visible bar (for US equities outside
  the session, the last close of the previous session). Orders fill at that price.
* Aggregated intervals (e.g. 1 h from 15 min bars) are UTC-aligned buckets built only from visible
  base bars, and a bucket is returned only once its end is ``<= now``.
* A news item is visible when ``published_at <= now``.

Sources
-------
* :class:`FrameSource` — an in-memory long-format frame; the bundled scenarios and user files load
  into it (see :func:`scenario_source` and :func:`load_ohlcv_files`).
* Live adapters implement the :class:`BarSource` protocol as well (a later addition).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from benchmark.market.calendar import is_open
from benchmark.market.clock import Clock, as_utc
from benchmark.market.universe import DEFAULT_UNIVERSE, Market, Universe

OHLCV = ("open", "high", "low", "close", "volume")

_INTERVAL_RE = re.compile(r"^(\d+)(m|min|h|d)$")
_UNIT_MINUTES = {"m": 1, "min": 1, "h": 60, "d": 1440}
KLINE_INTERVALS = ("1m", "5m", "15m", "30m", "1h", "2h", "4h", "1d")


class DataError(ValueError):
    """Bad market data, or a request the data cannot answer."""


def parse_interval(interval: str) -> pd.Timedelta:
    """``"15m"`` → 15 minutes, ``"4h"`` → 4 hours, ``"1d"`` → 1 day."""
    match = _INTERVAL_RE.match(str(interval).strip().lower())
    if not match:
        raise DataError(
            f"unknown interval {interval!r}; use one of {', '.join(KLINE_INTERVALS)}"
        )
    return pd.Timedelta(minutes=int(match.group(1)) * _UNIT_MINUTES[match.group(2)])


NewsMarket = Literal["crypto", "us", "macro"]


@dataclass(frozen=True)
class NewsItem:
    """A time-stamped news or event item (synthetic in the bundled scenarios), visible from
    ``published_at`` on."""

    id: str
    published_at: pd.Timestamp
    headline: str
    body: str
    symbols: tuple[str, ...] = ()
    market: NewsMarket = "macro"
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """The item as one JSON-ready object (the ``.news.jsonl`` line format)."""
        return {
            "id": self.id,
            "published_at": self.published_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "headline": self.headline,
            "body": self.body,
            "symbols": list(self.symbols),
            "market": self.market,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> NewsItem:
        """Parse one ``.news.jsonl`` object."""
        return cls(
            id=str(obj["id"]),
            published_at=as_utc(obj["published_at"]),
            headline=str(obj["headline"]),
            body=str(obj["body"]),
            symbols=tuple(str(s) for s in obj["symbols"]),
            market=obj["market"],
            source=str(obj["source"]),
        )


class BarSource(Protocol):
    """What the point-in-time view needs from a source of bars."""

    name: str
    universe: Universe
    bar_interval: pd.Timedelta

    def bars(self, symbol: str) -> pd.DataFrame:
        """Full history of ``symbol``: index ``ts`` (UTC open times, ascending), columns OHLCV."""
        ...

    def news(self) -> Sequence[NewsItem]:
        """All news items, sorted by ``published_at``."""
        ...


@dataclass
class _SymbolSeries:
    """Column arrays of one symbol for fast point-in-time lookups."""

    frame: pd.DataFrame
    close_ns: np.ndarray  # bar close instants, int64 ns
    close: np.ndarray

    @classmethod
    def build(cls, frame: pd.DataFrame, bar_interval: pd.Timedelta) -> _SymbolSeries:
        close_ns = (frame.index.as_unit("ns") + bar_interval).asi8
        return cls(frame, close_ns, frame["close"].to_numpy(dtype=float))


@dataclass
class FrameSource:
    """A source backed by a long-format frame ``symbol, ts, open, high, low, close, volume``."""

    name: str
    frame: pd.DataFrame
    universe: Universe = DEFAULT_UNIVERSE
    bar_interval: pd.Timedelta = pd.Timedelta(minutes=15)
    news_items: tuple[NewsItem, ...] = ()
    _by_symbol: dict[str, pd.DataFrame] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        missing = {"symbol", "ts", *OHLCV} - set(self.frame.columns)
        if missing:
            raise DataError(f"{self.name}: missing columns {sorted(missing)}")
        self._by_symbol = {}
        for symbol, group in self.frame.groupby("symbol", sort=False):
            bars = group.set_index(pd.DatetimeIndex(group["ts"]).tz_convert("UTC").as_unit("ns"))
            bars.index.name = "ts"
            self._by_symbol[str(symbol)] = bars[list(OHLCV)].sort_index()
        absent = [s for s in self.universe.symbols if s not in self._by_symbol]
        if absent:
            raise DataError(f"{self.name}: no bars for {', '.join(absent)}")
        self.news_items = tuple(sorted(self.news_items, key=lambda n: n.published_at))

    def bars(self, symbol: str) -> pd.DataFrame:
        return self._by_symbol[symbol]

    def news(self) -> Sequence[NewsItem]:
        return self.news_items

    @property
    def first_time(self) -> pd.Timestamp:
        return min(frame.index[0] for frame in self._by_symbol.values())

    @property
    def last_time(self) -> pd.Timestamp:
        """The close time of the last bar of any symbol."""
        return max(frame.index[-1] for frame in self._by_symbol.values()) + self.bar_interval


@dataclass(frozen=True)
class Snapshot:
    """What ``get_market_snapshot`` reports about a symbol at ``as_of``."""

    symbol: str
    market: Market
    as_of: pd.Timestamp
    price: float
    price_time: pd.Timestamp
    change_24h: float | None
    high_24h: float | None
    low_24h: float | None
    volume_24h: float
    market_open: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "symbol": self.symbol,
            "market": self.market,
            "as_of": self.as_of.isoformat(),
            "price": self.price,
            "price_time": self.price_time.isoformat(),
            "change_24h_pct": None if self.change_24h is None else round(self.change_24h * 100, 4),
            "high_24h": self.high_24h,
            "low_24h": self.low_24h,
            "volume_24h": self.volume_24h,
            "market_status": "open" if self.market_open else "closed",
        }


class PointInTimeData:
    """Read-only, point-in-time view of a source: nothing stamped after ``clock.now`` escapes."""

    def __init__(self, source: BarSource, clock: Clock) -> None:
        self._source = source
        self._clock = clock
        self._series = {
            symbol: _SymbolSeries.build(source.bars(symbol), source.bar_interval)
            for symbol in source.universe.symbols
        }
        news = list(source.news())
        self._news = news
        self._news_ns = np.array([n.published_at.value for n in news], dtype=np.int64)

    # -- basic facts -----------------------------------------------------------------------
    @property
    def now(self) -> pd.Timestamp:
        return self._clock.now

    @property
    def universe(self) -> Universe:
        return self._source.universe

    @property
    def bar_interval(self) -> pd.Timedelta:
        return self._source.bar_interval

    @property
    def source_name(self) -> str:
        return self._source.name

    def market_of(self, symbol: str) -> Market:
        return self.universe.market_of(self._check_symbol(symbol))

    def is_market_open(self, symbol: str) -> bool:
        return is_open(self.market_of(symbol), self.now)

    def _check_symbol(self, symbol: str) -> str:
        if symbol not in self.universe:
            raise DataError(
                f"unknown symbol {symbol!r}; tradable symbols are "
                f"crypto {', '.join(self.universe.crypto)} and US {', '.join(self.universe.us)}"
            )
        return symbol

    def _visible_count(self, symbol: str) -> int:
        series = self._series[self._check_symbol(symbol)]
        return int(np.searchsorted(series.close_ns, self.now.value, side="right"))

    # -- prices ----------------------------------------------------------------------------
    def has_price(self, symbol: str) -> bool:
        return self._visible_count(symbol) > 0

    def price(self, symbol: str) -> float:
        """Close of the latest bar that closed at or before ``now``."""
        n = self._visible_count(symbol)
        if n == 0:
            raise DataError(f"no price for {symbol} before {self.now.isoformat()}")
        return float(self._series[symbol].close[n - 1])

    def price_time(self, symbol: str) -> pd.Timestamp:
        n = self._visible_count(symbol)
        if n == 0:
            raise DataError(f"no price for {symbol} before {self.now.isoformat()}")
        return pd.Timestamp(int(self._series[symbol].close_ns[n - 1]), tz="UTC")

    def prices(self) -> dict[str, float]:
        """Latest visible price of every symbol that has one."""
        return {s: self.price(s) for s in self.universe.symbols if self.has_price(s)}

    # -- bars ------------------------------------------------------------------------------
    def bars(
        self,
        symbol: str,
        interval: str = "15m",
        start: object | None = None,
        end: object | None = None,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Closed bars of ``symbol`` with open time in ``[start, end]``, at most ``limit`` (latest).

        ``end`` is clipped to ``now``; a ``start`` after ``now`` gives an empty frame. The index is
        the bar open time; a column ``close_time`` tells when each bar closed (always ``<= now``).
        """
        step = parse_interval(interval)
        base = self.bar_interval
        if step < base or step % base != pd.Timedelta(0):
            raise DataError(
                f"interval {interval} is not a multiple of the data's bar interval "
                f"({int(base.total_seconds() // 60)} min)"
            )
        if limit is not None and limit < 1:
            raise DataError("limit must be a positive integer")
        n = self._visible_count(symbol)
        series = self._series[symbol]
        now = self.now
        hi = n
        if end is not None:
            # bars opening after min(end, now) are excluded (for aggregates: after their bucket)
            cutoff = min(as_utc(end), now)
            if step != base:
                cutoff = cutoff.floor(step) + step - base
            hi = min(hi, int(np.searchsorted(series.frame.index.asi8, cutoff.value, side="right")))
        lo = 0
        if start is not None:
            first = as_utc(start)
            if step != base:
                first = first.floor(step)
            lo = int(np.searchsorted(series.frame.index.asi8, first.value, side="left"))
        if limit is not None and step == base:
            lo = max(lo, hi - limit)
        elif limit is not None:
            # enough base bars for ``limit`` buckets plus one partial bucket on each side
            span = (limit + 2) * int(step / base)
            lo = max(lo, hi - span)
        visible = series.frame.iloc[lo:max(lo, hi)]
        if step != base:
            visible = _resample(visible, step)
            visible = visible[visible.index + step <= now]
        if start is not None:
            visible = visible[visible.index >= as_utc(start)]
        if end is not None:
            visible = visible[visible.index <= min(as_utc(end), now)]
        if limit is not None:
            visible = visible.iloc[-limit:]
        out = visible.copy()
        out["close_time"] = out.index + step
        return out

    # -- snapshot --------------------------------------------------------------------------
    def snapshot(self, symbol: str) -> Snapshot:
        """Latest price, 24 h change/high/low/volume and market status as of ``now``."""
        market = self.market_of(symbol)
        price = self.price(symbol)
        now = self.now
        series = self._series[symbol]
        n = self._visible_count(symbol)
        day_ago = (now - pd.Timedelta(hours=24)).value
        open_ns = series.close_ns - self.bar_interval.value
        lo = int(np.searchsorted(open_ns[:n], day_ago, side="left"))
        frame = series.frame
        highs = frame["high"].to_numpy()[lo:n]
        lows = frame["low"].to_numpy()[lo:n]
        volume = frame["volume"].to_numpy()[lo:n]
        # reference: the last close at or before 24 h ago
        k = int(np.searchsorted(series.close_ns[:n], day_ago, side="right"))
        change = None
        if k > 0:
            reference = float(series.close[k - 1])
            change = price / reference - 1.0 if reference > 0 else None
        return Snapshot(
            symbol=symbol,
            market=market,
            as_of=now,
            price=price,
            price_time=self.price_time(symbol),
            change_24h=change,
            high_24h=float(highs.max()) if highs.size else None,
            low_24h=float(lows.min()) if lows.size else None,
            volume_24h=float(volume.sum()) if volume.size else 0.0,
            market_open=is_open(market, now),
        )

    # -- news ------------------------------------------------------------------------------
    def news(
        self,
        start: object | None = None,
        end: object | None = None,
        symbols: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[NewsItem]:
        """News published in ``[start, min(end, now)]``, newest last, at most ``limit`` (latest)."""
        n = int(np.searchsorted(self._news_ns, self.now.value, side="right"))
        items = self._news[:n]
        if start is not None:
            lo = as_utc(start)
            items = [i for i in items if i.published_at >= lo]
        if end is not None:
            hi = as_utc(end)
            items = [i for i in items if i.published_at <= hi]
        if symbols is not None:
            wanted = set(symbols)
            items = [i for i in items if wanted & set(i.symbols)]
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return list(items)


def _resample(bars: pd.DataFrame, step: pd.Timedelta) -> pd.DataFrame:
    """UTC-aligned OHLCV buckets of ``step`` (epoch origin) from consecutive base bars.

    Empty buckets do not appear. Implemented with ``numpy.ufunc.reduceat`` over bucket starts.
    """
    if bars.empty:
        return bars
    stamps = bars.index.asi8
    buckets = stamps - stamps % step.value
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    ends = np.r_[starts[1:], stamps.size] - 1
    index = pd.DatetimeIndex(buckets[starts], tz="UTC", name=bars.index.name).as_unit("ns")
    return pd.DataFrame(
        {
            "open": bars["open"].to_numpy()[starts],
            "high": np.maximum.reduceat(bars["high"].to_numpy(), starts),
            "low": np.minimum.reduceat(bars["low"].to_numpy(), starts),
            "close": bars["close"].to_numpy()[ends],
            "volume": np.add.reduceat(bars["volume"].to_numpy(), starts),
        },
        index=index,
    )


# -- loading ---------------------------------------------------------------------------------


def scenario_source(name: str) -> FrameSource:
    """The bundled scenario ``name`` as a source (bars and news)."""
    from benchmark.market.scenarios import load_scenario

    scenario = load_scenario(name)
    return FrameSource(name=f"scenario:{name}", frame=scenario.bars, news_items=scenario.news)


_COLUMN_ALIASES = {
    "timestamp": "ts", "time": "ts", "date": "ts", "datetime": "ts", "open_time": "ts",
    "o": "open", "h": "high", "l": "low", "c": "close", "v": "volume", "ticker": "symbol",
}


@dataclass(frozen=True)
class GapReport:
    """A hole in a symbol's bars longer than one bar interval."""

    symbol: str
    after: pd.Timestamp
    before: pd.Timestamp
    missing_bars: int


@dataclass
class LoadedFiles:
    """User OHLCV files loaded and validated: the source plus the gaps found."""

    source: FrameSource
    gaps: list[GapReport]


def _read_table(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    raise DataError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


def _validate_frame(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Normalise columns and check the rules; errors name the file, the row and the problem."""
    frame = frame.rename(columns={c: _COLUMN_ALIASES.get(c.lower(), c.lower()) for c in frame})
    if "symbol" not in frame.columns:
        frame["symbol"] = path.stem.split(".")[0].upper()
    missing = {"ts", *OHLCV} - set(frame.columns)
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    try:
        ts = pd.to_datetime(frame["ts"], utc=True, errors="raise")
    except (ValueError, TypeError) as exc:
        raise DataError(f"{path}: unparseable timestamp ({exc})") from exc
    frame = frame.assign(ts=ts)
    for column in OHLCV:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{path}: row {row + 2}: {column} is not a finite number")
        frame[column] = values.astype(float)
    for symbol, group in frame.groupby("symbol", sort=False):
        rows = group.index.to_numpy()
        stamps = group["ts"].to_numpy()
        if len(stamps) > 1:
            step = np.diff(pd.DatetimeIndex(stamps).as_unit("ns").asi8)
            if (step <= 0).any():
                k = int(np.flatnonzero(step <= 0)[0]) + 1
                raise DataError(
                    f"{path}: row {rows[k] + 2}: timestamps of {symbol} are not strictly "
                    f"increasing ({group['ts'].iloc[k - 1]} then {group['ts'].iloc[k]})"
                )
        checks = (
            (group[["open", "high", "low", "close"]] <= 0).any(axis=1), "prices must be positive",
        ), (
            group["high"] < group[["open", "close"]].max(axis=1), "high is below open or close",
        ), (
            group["low"] > group[["open", "close"]].min(axis=1), "low is above open or close",
        ), (group["volume"] < 0, "volume is negative")
        for mask, problem in checks:
            if mask.any():
                k = int(np.flatnonzero(mask.to_numpy())[0])
                raise DataError(f"{path}: row {rows[k] + 2}: {symbol}: {problem}")
    return frame


def _infer_interval(frame: pd.DataFrame) -> pd.Timedelta:
    steps = frame.groupby("symbol")["ts"].diff().dropna()
    if steps.empty:
        raise DataError("need at least two bars of one symbol to infer the bar interval")
    step = pd.Timedelta(steps.min())
    if not pd.Timedelta(minutes=1) <= step <= pd.Timedelta(days=1):
        raise DataError(f"bar interval {step} is outside 1 min … 1 day")
    return step


def load_ohlcv_files(
    paths: Sequence[str | Path],
    universe: Universe | None = None,
    bar_interval: str | None = None,
) -> LoadedFiles:
    """Load and validate user OHLCV files (CSV or Parquet).

    Each file holds columns ``ts`` (or timestamp/time/date), ``open``, ``high``, ``low``,
    ``close``, ``volume`` and optionally ``symbol``; without a symbol column the file name's stem is
    the symbol (``BTC.csv``). Checks: parseable timestamps, strictly increasing per symbol, finite
    positive prices, ``high >= max(open, close)``, ``low <= min(open, close)``, non-negative
    volume. Gaps (missing bars; for US equities only inside sessions would matter, so all holes are
    reported and the caller decides) come back in :attr:`LoadedFiles.gaps`.

    ``universe`` defaults to the symbols found: those of the default crypto list are crypto,
    every other symbol is treated as a US equity.
    """
    if not paths:
        raise DataError("no data files given")
    frames = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise DataError(f"{path}: no such file")
        frames.append(_validate_frame(path, _read_table(path)))
    frame = pd.concat(frames, ignore_index=True)
    dup = frame.duplicated(subset=["symbol", "ts"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(f"symbol {row['symbol']} has two bars at {row['ts']} across files")
    step = parse_interval(bar_interval) if bar_interval else _infer_interval(frame)
    symbols = sorted(frame["symbol"].unique())
    if universe is None:
        crypto = tuple(s for s in symbols if s in DEFAULT_UNIVERSE.crypto)
        universe = Universe(crypto=crypto, us=tuple(s for s in symbols if s not in crypto))
    unknown = set(symbols) - set(universe.symbols)
    if unknown:
        raise DataError(f"symbols not in the universe: {', '.join(sorted(unknown))}")
    gaps = []
    for symbol, group in frame.sort_values("ts").groupby("symbol"):
        stamps = pd.DatetimeIndex(group["ts"]).as_unit("ns")
        holes = np.flatnonzero(np.diff(stamps.asi8) > step.value)
        for k in holes:
            before, after = stamps[k], stamps[k + 1]
            gaps.append(GapReport(str(symbol), before, after, int((after - before) / step) - 1))
    name = "files:" + ",".join(Path(p).name for p in paths)
    source = FrameSource(name=name, frame=frame, universe=universe, bar_interval=step)
    return LoadedFiles(source=source, gaps=gaps)
