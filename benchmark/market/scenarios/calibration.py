"""Calibration statistics of scenario bars and the targets they must meet.

Returns are one-hour log returns. Crypto hours are UTC clock hours; US hours are the blocks of
four bars counted from each session's open (a trailing partial block is dropped), so an hour
never spans an overnight gap. Hours that overlap a shock window touching the series are left
out: the targets describe ordinary trading, the shocks are designed separately.

:data:`TARGETS` lists every bound; :func:`check_targets` compares a measured calibration dict
(as stored in ``NAME.meta.json``) against them and returns the violations in words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from benchmark.market.clock import as_utc
from benchmark.market.universe import DEFAULT_UNIVERSE

HOUR = pd.Timedelta(hours=1)
BAR = pd.Timedelta(minutes=15)

LARGE_CAPS: tuple[str, ...] = ("AAPL", "GOOGL", "META", "AMZN", "JPM", "V", "PG", "JNJ")
"""US names whose hourly volatility is held to the tighter large-cap band."""


@dataclass(frozen=True)
class Band:
    """An inclusive range ``[low, high]`` for one statistic."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.low <= float(value) <= self.high

    def __str__(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"


TARGETS: dict[str, Band] = {
    "btc_hourly_std": Band(0.003, 0.012),
    "crypto_hourly_std": Band(0.003, 0.02),
    "large_cap_hourly_std": Band(0.0015, 0.008),
    "us_hourly_std": Band(0.001, 0.015),
    "btc_excess_kurtosis": Band(1.0, 100.0),
    "crypto_median_excess_kurtosis": Band(1.0, 100.0),
    "us_pooled_excess_kurtosis": Band(1.0, 100.0),
    "btc_abs_acf1": Band(0.05, 1.0),
    "crypto_mean_abs_acf1": Band(0.05, 1.0),
    "us_pooled_abs_acf1": Band(0.05, 1.0),
    "crypto_mean_pair_corr": Band(0.55, 0.85),
    "crypto_pair_corr": Band(0.35, 0.95),
    "us_mean_pair_corr": Band(0.25, 0.60),
    "crypto_us_mean_corr": Band(-0.05, 0.25),
    "us_open_volume_ratio": Band(1.5, 10.0),
    "us_close_volume_ratio": Band(1.2, 10.0),
    "crypto_peak_trough_volume_ratio": Band(1.2, 5.0),
    "us_gap_share": Band(0.9, 1.0),
}
"""Bounds every shipped scenario meets (see ``SCENARIOS.md`` for the reasoning)."""


@dataclass(frozen=True)
class _Wide:
    """Open and close prices of one market, one column per symbol, indexed by bar time."""

    open: pd.DataFrame
    close: pd.DataFrame

    @classmethod
    def of(cls, bars: pd.DataFrame, symbols: Sequence[str]) -> _Wide:
        part = bars[bars["symbol"].isin(symbols)]
        opens = part.pivot(index="ts", columns="symbol", values="open")[list(symbols)]
        closes = part.pivot(index="ts", columns="symbol", values="close")[list(symbols)]
        return cls(opens, closes)

    def hourly(self, starts: pd.DatetimeIndex) -> pd.DataFrame:
        """Log returns over ``[t, t + 1h)`` for each start ``t``."""
        first = self.open.loc[starts].to_numpy()
        last = self.close.loc[starts + HOUR - BAR].to_numpy()
        return pd.DataFrame(np.log(last / first), index=starts, columns=self.open.columns)


def crypto_hour_starts(times: pd.DatetimeIndex) -> pd.DatetimeIndex:
    """Starts of the complete UTC clock hours in a 24/7 bar index."""
    present = set(times)
    on_hour = times[times.minute == 0]
    return pd.DatetimeIndex([t for t in on_hour if t + HOUR - BAR in present])


def session_hour_starts(times: pd.DatetimeIndex) -> pd.DatetimeIndex:
    """Starts of the complete four-bar blocks counted from each session's open."""
    new = np.r_[True, np.diff(times.as_unit("ns").asi8) != BAR.value]
    session = np.cumsum(new) - 1
    position = np.arange(len(times)) - np.flatnonzero(new)[session]
    remaining = np.bincount(session)[session] - position
    keep = (position % 4 == 0) & (remaining >= 4)
    return times[keep]


def shock_windows(
    regimes: Iterable[dict[str, Any]],
) -> list[tuple[pd.Timestamp, pd.Timestamp, str]]:
    """``(start, end, scope)`` of every shock entry of a meta regime list."""
    return [
        (as_utc(r["start"]), as_utc(r["end"]), str(r["scope"]))
        for r in regimes
        if r["regime"] == "shock"
    ]


def _touches(scope: str, symbols: Iterable[str]) -> bool:
    markets = {DEFAULT_UNIVERSE.market_of(s) for s in symbols if s in DEFAULT_UNIVERSE}
    return scope == "all" or scope in markets or scope in set(symbols)


def clean_mask(
    starts: pd.DatetimeIndex,
    windows: list[tuple[pd.Timestamp, pd.Timestamp, str]],
    symbols: Iterable[str],
) -> np.ndarray:
    """True for hours that overlap no shock window touching any of ``symbols``."""
    chosen = list(symbols)
    keep = np.ones(len(starts), dtype=bool)
    for lo, hi, scope in windows:
        if _touches(scope, chosen):
            keep &= ~((starts < hi) & (starts + HOUR > lo))
    return keep


def excess_kurtosis(x: np.ndarray) -> float:
    """Population excess kurtosis ``m4 / m2^2 - 3``."""
    d = np.asarray(x, dtype=float) - np.mean(x)
    m2 = float(np.mean(d**2))
    return float(np.mean(d**4)) / (m2 * m2) - 3.0


def abs_acf1(x: np.ndarray, consecutive: np.ndarray) -> float:
    """Lag-1 autocorrelation of ``|x|`` over the pairs ``(x[i], x[i+1])`` flagged consecutive."""
    a = np.abs(np.asarray(x, dtype=float))
    pairs = np.flatnonzero(consecutive[: len(a) - 1])
    return float(np.corrcoef(a[pairs], a[pairs + 1])[0, 1])


def _consecutive(starts: pd.DatetimeIndex) -> np.ndarray:
    """Flags ``i`` where hour ``i + 1`` starts exactly one hour after hour ``i``.

    Session blocks of different sessions are never one hour apart, so for US series this also
    keeps pairs inside one session.
    """
    return np.r_[np.diff(starts.as_unit("ns").asi8) == HOUR.value, False]


def _pair_stats(frame: pd.DataFrame) -> dict[str, float]:
    corr = frame.corr().to_numpy()
    upper = corr[np.triu_indices_from(corr, k=1)]
    return {
        "mean_pair_corr": float(upper.mean()),
        "min_pair_corr": float(upper.min()),
        "max_pair_corr": float(upper.max()),
    }


def _symbol_stats(
    returns: pd.Series, consecutive: np.ndarray, bars: pd.DataFrame
) -> dict[str, float]:
    x = returns.to_numpy()
    days = (bars["ts"].iloc[-1] - bars["ts"].iloc[0]) / pd.Timedelta(days=1)
    return {
        "hourly_std": float(np.std(x, ddof=1)),
        "excess_kurtosis": excess_kurtosis(x),
        "abs_acf1": abs_acf1(x, consecutive),
        "hours": len(x),
        "first_open": float(bars["open"].iloc[0]),
        "last_close": float(bars["close"].iloc[-1]),
        "min_low": float(bars["low"].min()),
        "max_high": float(bars["high"].max()),
        "mean_daily_notional": float((bars["close"] * bars["volume"]).sum() / max(days, 1.0)),
    }


def _clean_series(
    wide: _Wide, starts: pd.DatetimeIndex, windows: list, symbol: str
) -> tuple[pd.Series, np.ndarray]:
    kept = starts[clean_mask(starts, windows, [symbol])]
    return wide.hourly(kept)[symbol], _consecutive(kept)


def _volume_profile(
    bars: pd.DataFrame, us: Sequence[str], crypto: Sequence[str]
) -> dict[str, float]:
    part = bars[bars["symbol"].isin(us)].copy()
    new = part["ts"].diff().ne(BAR) | part["symbol"].ne(part["symbol"].shift())
    part["pos"] = part.groupby(new.cumsum()).cumcount()
    part["n"] = part.groupby(new.cumsum())["ts"].transform("size")
    part["rel"] = part["volume"] / part.groupby("symbol")["volume"].transform("mean")
    mid = part.loc[(part["pos"] >= 8) & (part["pos"] < part["n"] - 8), "rel"].mean()
    opening = part.loc[part["pos"] == 0, "rel"].mean()
    closing = part.loc[part["pos"] == part["n"] - 1, "rel"].mean()
    prev_close = part.groupby("symbol")["close"].shift()
    firsts = (part["pos"] == 0) & prev_close.notna()
    gap_share = float((part.loc[firsts, "open"] != prev_close[firsts]).mean())
    cpart = bars[bars["symbol"].isin(crypto)]
    crel = cpart["volume"] / cpart.groupby("symbol")["volume"].transform("mean")
    hour = cpart["ts"].dt.hour
    weekday = cpart["ts"].dt.day_of_week < 5
    peak = crel[(hour >= 13) & (hour < 17) & weekday].mean()
    trough = crel[(hour >= 2) & (hour < 6) & weekday].mean()
    return {
        "us_open_volume_ratio": float(opening / mid),
        "us_close_volume_ratio": float(closing / mid),
        "us_gap_share": gap_share,
        "crypto_peak_trough_volume_ratio": float(peak / trough),
    }


def _regime_returns(bars: pd.DataFrame, regimes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Equal-weight log return of each market over each market-level regime entry."""
    out = []
    for entry in regimes:
        scope = entry["scope"]
        if scope not in ("crypto", "us", "all"):
            continue
        for market in ("crypto", "us") if scope == "all" else (scope,):
            value = market_return(bars, market, as_utc(entry["start"]), as_utc(entry["end"]))
            if value is None:
                continue
            out.append(
                {
                    "start": entry["start"],
                    "end": entry["end"],
                    "scope": scope,
                    "regime": entry["regime"],
                    "market": market,
                    "move": entry.get("move", 0.0),
                    "equal_weight_return": round(value, 6),
                }
            )
    return out


def market_return(
    bars: pd.DataFrame, market: str, start: pd.Timestamp, end: pd.Timestamp
) -> float | None:
    """Equal-weight log return of ``market`` from the last close by ``start`` to that by ``end``.

    ``None`` when no bar of the market closes inside ``(start, end]``.
    """
    symbols = DEFAULT_UNIVERSE.crypto if market == "crypto" else DEFAULT_UNIVERSE.us
    part = bars[bars["symbol"].isin(symbols)]
    closes_at = part["ts"] + BAR
    inside = part[(closes_at > start) & (closes_at <= end)]
    if inside.empty:
        return None
    before = part[closes_at <= start]
    last = inside.groupby("symbol")["close"].last()
    if before.empty:
        first = inside.groupby("symbol")["open"].first()
    else:
        first = before.groupby("symbol")["close"].last()
    return float(np.log(last / first.loc[last.index]).mean())


def measure(bars: pd.DataFrame, regimes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """All calibration statistics of a scenario (the ``calibration`` block of its meta file)."""
    crypto, us = list(DEFAULT_UNIVERSE.crypto), list(DEFAULT_UNIVERSE.us)
    windows = shock_windows(regimes)
    cw, uw = _Wide.of(bars, crypto), _Wide.of(bars, us)
    c_starts = crypto_hour_starts(pd.DatetimeIndex(cw.open.index))
    u_starts = session_hour_starts(pd.DatetimeIndex(uw.open.index))
    per_symbol: dict[str, dict[str, float]] = {}
    pooled, pooled_pairs = [], []
    grouped = {s: g for s, g in bars.groupby("symbol", sort=False)}
    for symbol in crypto + us:
        returns, consecutive = _clean_series(
            cw if symbol in crypto else uw,
            c_starts if symbol in crypto else u_starts,
            windows,
            symbol,
        )
        per_symbol[symbol] = _symbol_stats(returns, consecutive, grouped[symbol])
        if symbol in us:
            z = (returns / returns.std(ddof=1)).to_numpy()
            pooled.append(z)
            idx = np.flatnonzero(consecutive[: len(z) - 1])
            pooled_pairs.append(np.column_stack([np.abs(z[idx]), np.abs(z[idx + 1])]))
    pooled_all = np.concatenate(pooled)
    pairs = np.concatenate(pooled_pairs)
    c_keep = c_starts[clean_mask(c_starts, windows, crypto)]
    u_keep = u_starts[clean_mask(u_starts, windows, us)]
    both = u_starts[clean_mask(u_starts, windows, crypto + us)]
    mixed = pd.concat([cw.hourly(both), uw.hourly(both)], axis=1).corr()
    cross = mixed.loc[crypto, us].to_numpy()
    crypto_stats = [per_symbol[s] for s in crypto]
    result: dict[str, Any] = {
        "return_interval": "1h",
        "excludes": "hours overlapping a shock window that touches the series",
        "symbols": per_symbol,
        "crypto": {
            **_pair_stats(cw.hourly(c_keep)),
            "median_excess_kurtosis": float(
                np.median([s["excess_kurtosis"] for s in crypto_stats])
            ),
            "mean_abs_acf1": float(np.mean([s["abs_acf1"] for s in crypto_stats])),
        },
        "us": {
            **_pair_stats(uw.hourly(u_keep)),
            "pooled_excess_kurtosis": excess_kurtosis(pooled_all),
            "pooled_abs_acf1": float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]),
        },
        "crypto_us": {"mean_corr": float(cross.mean())},
        "volume": _volume_profile(bars, us, crypto),
        "regime_returns": _regime_returns(bars, regimes),
    }
    return _rounded(result)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def headline_figures(calibration: dict[str, Any]) -> dict[str, float]:
    """The scalar statistics that :data:`TARGETS` bounds, keyed like the targets."""
    sym = calibration["symbols"]
    crypto, us = DEFAULT_UNIVERSE.crypto, DEFAULT_UNIVERSE.us
    return {
        "btc_hourly_std": sym["BTC"]["hourly_std"],
        "btc_excess_kurtosis": sym["BTC"]["excess_kurtosis"],
        "btc_abs_acf1": sym["BTC"]["abs_acf1"],
        "crypto_median_excess_kurtosis": calibration["crypto"]["median_excess_kurtosis"],
        "crypto_mean_abs_acf1": calibration["crypto"]["mean_abs_acf1"],
        "crypto_mean_pair_corr": calibration["crypto"]["mean_pair_corr"],
        "us_mean_pair_corr": calibration["us"]["mean_pair_corr"],
        "us_pooled_excess_kurtosis": calibration["us"]["pooled_excess_kurtosis"],
        "us_pooled_abs_acf1": calibration["us"]["pooled_abs_acf1"],
        "crypto_us_mean_corr": calibration["crypto_us"]["mean_corr"],
        **{k: v for k, v in calibration["volume"].items()},
        "min_crypto_hourly_std": min(sym[s]["hourly_std"] for s in crypto),
        "max_crypto_hourly_std": max(sym[s]["hourly_std"] for s in crypto),
        "min_large_cap_hourly_std": min(sym[s]["hourly_std"] for s in LARGE_CAPS),
        "max_large_cap_hourly_std": max(sym[s]["hourly_std"] for s in LARGE_CAPS),
        "min_us_hourly_std": min(sym[s]["hourly_std"] for s in us),
        "max_us_hourly_std": max(sym[s]["hourly_std"] for s in us),
    }


def check_targets(calibration: dict[str, Any]) -> list[str]:
    """Every way ``calibration`` misses :data:`TARGETS`, as sentences (empty when all are met)."""
    sym = calibration["symbols"]
    failures: list[str] = []

    def need(label: str, value: float, band: Band) -> None:
        if value not in band:
            failures.append(f"{label} = {value:.6g} is outside {band}")

    figures = headline_figures(calibration)
    for key in (
        "btc_hourly_std",
        "btc_excess_kurtosis",
        "btc_abs_acf1",
        "crypto_median_excess_kurtosis",
        "crypto_mean_abs_acf1",
        "crypto_mean_pair_corr",
        "us_mean_pair_corr",
        "us_pooled_excess_kurtosis",
        "us_pooled_abs_acf1",
        "crypto_us_mean_corr",
        "us_open_volume_ratio",
        "us_close_volume_ratio",
        "crypto_peak_trough_volume_ratio",
        "us_gap_share",
    ):
        need(key, figures[key], TARGETS[key])
    for s in DEFAULT_UNIVERSE.crypto:
        need(f"{s} hourly std", sym[s]["hourly_std"], TARGETS["crypto_hourly_std"])
    for s in DEFAULT_UNIVERSE.us:
        band = TARGETS["large_cap_hourly_std"] if s in LARGE_CAPS else TARGETS["us_hourly_std"]
        need(f"{s} hourly std", sym[s]["hourly_std"], band)
    need(
        "crypto min pair corr", calibration["crypto"]["min_pair_corr"], TARGETS["crypto_pair_corr"]
    )
    need(
        "crypto max pair corr", calibration["crypto"]["max_pair_corr"], TARGETS["crypto_pair_corr"]
    )
    lower_block = min(figures["crypto_mean_pair_corr"], figures["us_mean_pair_corr"])
    if figures["crypto_us_mean_corr"] >= lower_block:
        failures.append("crypto-US correlation is not below both within-block correlations")
    return failures
