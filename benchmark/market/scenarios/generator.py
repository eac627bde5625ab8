"""Seeded generator of the bundled offline market, and the command that rebuilds the data files.

Model (documented in ``SCENARIOS.md``): every symbol's 15-minute log return is

    beta * regime drift + sigma * (common factors + idiosyncratic part) + shock jumps

where each factor and each idiosyncratic series is a unit-variance GARCH(1,1) process driven by
Student-t innovations. Crypto trades on a 24/7 grid; US equities only on NYSE regular-session
bars, with an overnight gap at each open. Prices are rounded to each symbol's tick and volumes
to a lot size before writing, so the shipped numbers do not depend on floating-point details of
the machine that reads them.

Run ``python -m benchmark.market.scenarios.generator [--scenario NAME ...] [--out DIR]`` to
rebuild the shipped files.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.signal import lfilter

from benchmark.market.clock import as_utc
from benchmark.market.universe import DEFAULT_UNIVERSE, Market

from . import (
    BAR_COLUMNS,
    SCENARIO_NAMES,
    Scenario,
    check_name,
    load_scenario,
    scenario_dir,
)
from .calibration import check_targets, measure
from .news import build_news
from .specs import PROFILES, SPECS, ScenarioSpec, Shock, SymbolProfile
from .timeline import (
    BAR,
    BAR_INTERVAL,
    Segment,
    Timeline,
    build_timeline,
    crypto_bar_times,
    iso,
    nyse_sessions,
    shock_end,
    us_bar_times,
)

GENERATOR_VERSION = "1.0.0"

T_DOF = 5.0
"""Degrees of freedom of the Student-t innovations (finite kurtosis, heavy tails)."""

GARCH: dict[Market, tuple[float, float]] = {"crypto": (0.06, 0.92), "us": (0.07, 0.90)}
"""GARCH(1,1) ``(alpha, beta)`` per 15-minute step; ``omega = 1 - alpha - beta``."""

IDIO_JUMPS: dict[Market, tuple[float, float]] = {"crypto": (0.004, 4.0), "us": (0.012, 4.0)}
"""Idiosyncratic news jumps per market: (probability per bar, size std in bar-sigma units)."""

SESSION_VOL = (0.35, 0.6)
"""US day-level volatility state: (log-volatility std, AR(1) coefficient across sessions)."""

OVERNIGHT_VARIANCE = 0.25
"""Variance of an overnight US gap as a fraction of the in-session daily variance."""

IDIO_BRIDGE = 0.5
"""Fraction of each idiosyncratic series' net drift removed within every regime segment."""

LEVEL_JITTER = 0.03
"""Log-normal spread of a scenario's starting prices around the reference levels."""

VOLUME_BOOST = 0.8
"""Elasticity of volume to the post-shock volatility multiplier."""

VOLUME_REGIME = {"steady": 0.9, "uptrend": 1.05, "downtrend": 1.15, "shock": 1.6}
"""Volume multiplier by regime."""

_STREAMS = ("crypto_garch", "us_garch", "gaps", "levels", "ranges", "volume", "news")


@dataclass(frozen=True)
class _MarketFrame:
    """Per-bar inputs shared by every symbol of one market."""

    times: pd.DatetimeIndex
    segment_id: np.ndarray
    drift: np.ndarray
    scale: np.ndarray
    regime: np.ndarray


@dataclass(frozen=True)
class _SymbolPath:
    """Log prices and per-bar volatility of one symbol before rounding.

    ``z`` is the noise part of each return in units of ``sigma`` (it drives volume), ``jump`` the
    shock part, ``new_session`` flags bars whose open is not the previous bar's close and
    ``boost`` is the post-shock volatility multiplier (busier markets trade more).
    """

    log_open: np.ndarray
    log_close: np.ndarray
    sigma: np.ndarray
    jump: np.ndarray
    z: np.ndarray
    new_session: np.ndarray
    boost: np.ndarray


def _streams(seed: int) -> dict[str, np.random.Generator]:
    """Independent random streams, one per purpose, from one seed."""
    children = np.random.SeedSequence(seed).spawn(len(_STREAMS))
    return {
        name: np.random.Generator(np.random.PCG64(child))
        for name, child in zip(_STREAMS, children, strict=True)
    }


def _garch(
    rng: np.random.Generator, steps: int, series: int, market: Market
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-variance GARCH(1,1) paths with standardised Student-t shocks: (values, variances)."""
    alpha, beta = GARCH[market]
    omega = 1.0 - alpha - beta
    z = rng.standard_t(T_DOF, size=(steps, series)) / math.sqrt(T_DOF / (T_DOF - 2.0))
    values = np.empty_like(z)
    variances = np.empty_like(z)
    h = np.ones(series)
    for t in range(steps):
        variances[t] = h
        values[t] = np.sqrt(h) * z[t]
        h = omega + alpha * values[t] ** 2 + beta * h
    return values, variances


def _with_jumps(rng: np.random.Generator, values: np.ndarray, market: Market) -> np.ndarray:
    """Add rare Gaussian jumps to unit-variance series, keeping the total variance at 1."""
    prob, size = IDIO_JUMPS[market]
    hits = rng.random(values.shape) < prob
    jumps = np.where(hits, size * rng.standard_normal(values.shape), 0.0)
    return values * math.sqrt(1.0 - prob * size**2) + jumps


def _bridge(values: np.ndarray, segment_id: np.ndarray, fraction: float) -> np.ndarray:
    """Remove ``fraction`` of each segment's mean from ``values`` (rows are bars)."""
    out = np.array(values, dtype=float)
    for seg in np.unique(segment_id):
        rows = segment_id == seg
        out[rows] -= fraction * out[rows].mean(axis=0)
    return out


def _normalise_rms(weights: np.ndarray) -> np.ndarray:
    return weights / math.sqrt(float(np.mean(weights**2)))


def _crypto_seasonality(times: pd.DatetimeIndex) -> np.ndarray:
    """Volatility by time of day (busiest in the European/US overlap) and lower at weekends."""
    hour = times.hour.to_numpy() + times.minute.to_numpy() / 60.0 + 0.125
    shape = (
        0.75
        + 0.5 * np.exp(-((hour - 15.0) ** 2) / 12.5)
        + 0.15 * np.exp(-((hour - 8.0) ** 2) / 4.5)
    )
    shape = shape * np.where(times.day_of_week.to_numpy() >= 5, 0.75, 1.0)
    return _normalise_rms(shape)


def _session_positions(times: pd.DatetimeIndex) -> tuple[np.ndarray, np.ndarray]:
    """Position of each US bar in its session and the session's bar count."""
    starts = (
        np.r_[True, np.diff(times.as_unit("ns").asi8) != BAR.value]
        if len(times)
        else np.zeros(0, bool)
    )
    session = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    position = np.arange(len(times)) - first[session]
    counts = np.bincount(session)[session]
    return position, counts


def _us_seasonality(times: pd.DatetimeIndex) -> np.ndarray:
    """U-shaped intraday volatility: highest at the open, a smaller rise into the close."""
    k, n = _session_positions(times)
    shape = 0.8 + 1.0 * np.exp(-k / 2.0) + 0.4 * np.exp(-(n - 1 - k) / 2.0)
    return _normalise_rms(shape)


def _session_vol_state(times: pd.DatetimeIndex, rng: np.random.Generator) -> np.ndarray:
    """A common volatility multiplier per US session (persistent, log-normal, mean square 1)."""
    k, _ = _session_positions(times)
    session = np.cumsum(k == 0) - 1
    spread, phi = SESSION_VOL
    shocks = rng.standard_normal(int(session.max()) + 1 if len(times) else 0)
    state = lfilter([math.sqrt(1.0 - phi**2)], [1.0, -phi], shocks) * spread
    return _normalise_rms(np.exp(state))[session]


def _market_frame(
    times: pd.DatetimeIndex, segments: tuple[Segment, ...], seasonality: np.ndarray
) -> _MarketFrame:
    """Segment ids, per-bar drift, volatility scale and regime labels of one market."""
    seg_id = np.full(len(times), -1)
    drift = np.zeros(len(times))
    vol = np.ones(len(times))
    regime = np.empty(len(times), dtype=object)
    for i, seg in enumerate(segments):
        lo, hi = times.searchsorted(seg.start), times.searchsorted(seg.end)
        seg_id[lo:hi] = i
        vol[lo:hi] = seg.vol
        regime[lo:hi] = seg.regime
        if hi > lo:
            drift[lo:hi] = seg.move / (hi - lo)
    if (seg_id < 0).any():
        raise ValueError("regime segments do not cover every bar")
    return _MarketFrame(times, seg_id, drift, seasonality * vol, regime)


def _hump(n: int) -> np.ndarray:
    weights = np.sin(np.pi * (np.arange(n) + 0.5) / n)
    return weights / weights.sum()


def _decay(n: int) -> np.ndarray:
    weights = np.exp(-np.arange(n) / max(n / 3.0, 1.0))
    return weights / weights.sum()


@dataclass(frozen=True)
class _ShockPath:
    """Where one shock lands on a market's bars, for a symbol with beta 1."""

    gap: np.ndarray
    bar: np.ndarray
    boost: np.ndarray


def _shock_path(shock: Shock, move: float, times: pd.DatetimeIndex) -> _ShockPath:
    """Crash, rebound and volatility boost of ``shock`` on the bars ``times``.

    If no bar opens exactly at the shock (the US market is closed), the crash is taken in the
    opening gap of the next bar and the rebound starts in that bar. A shock that falls inside a
    bar is rejected.
    """
    n = len(times)
    gap, bar, boost = np.zeros(n), np.zeros(n), np.ones(n)
    at = as_utc(shock.at)
    i0 = int(times.searchsorted(at))
    if i0 >= n:
        return _ShockPath(gap, bar, boost)
    if i0 > 0 and times[i0 - 1] + BAR > at:
        raise ValueError(f"shock at {shock.at} ({shock.scope}) is not on a 15-minute bar boundary")
    if times[i0] == at:
        k = min(shock.crash_bars, n - i0)
        bar[i0 : i0 + k] += move * _hump(shock.crash_bars)[:k]
        r0 = i0 + k
    else:
        gap[i0] += move
        r0 = i0
    r1 = min(max(int(times.searchsorted(shock_end(shock))), r0 + 4), n)
    if r1 > r0 and shock.recovery:
        bar[r0:r1] += -move * shock.recovery * _decay(r1 - r0)
    hours = (times[i0:] - times[i0]) / pd.Timedelta(hours=1)
    decay = np.exp(-math.log(2.0) * np.asarray(hours, dtype=float) / shock.half_life_hours)
    boost[i0:] = 1.0 + (shock.vol_boost - 1.0) * decay
    return _ShockPath(gap, bar, boost)


@dataclass
class _Shocks:
    """Accumulated shock effects on one market: per-symbol jumps and volatility boosts."""

    gap: np.ndarray
    bar: np.ndarray
    market_boost: np.ndarray
    symbol_boost: np.ndarray


def _market_shocks(
    shocks: tuple[Shock, ...],
    market: Market,
    times: pd.DatetimeIndex,
    profiles: list[SymbolProfile],
) -> _Shocks:
    n, m = len(times), len(profiles)
    out = _Shocks(np.zeros((n, m)), np.zeros((n, m)), np.ones(n), np.ones((n, m)))
    symbols = [p.symbol for p in profiles]
    for shock in shocks:
        move = shock.crypto if market == "crypto" else shock.us
        if shock.scope in (market, "all"):
            path = _shock_path(shock, move, times)
            betas = np.array([p.trend_beta for p in profiles])
            out.gap += path.gap[:, None] * betas
            out.bar += path.bar[:, None] * betas
            out.market_boost = np.maximum(out.market_boost, path.boost)
        elif shock.scope in symbols:
            j = symbols.index(shock.scope)
            path = _shock_path(shock, move, times)
            out.gap[:, j] += path.gap
            out.bar[:, j] += path.bar
            out.symbol_boost[:, j] = np.maximum(out.symbol_boost[:, j], path.boost)
    return out


def _crypto_paths(
    frame: _MarketFrame,
    shocks: _Shocks,
    profiles: list[SymbolProfile],
    global_values: np.ndarray,
    global_var: np.ndarray,
    rng: np.random.Generator,
    log_p0: np.ndarray,
) -> list[_SymbolPath]:
    """Log-price paths of the crypto symbols on the 24/7 grid."""
    n, m = len(frame.times), len(profiles)
    values, variances = _garch(rng, n, 1 + m, "crypto")
    scale = frame.scale * shocks.market_boost
    factor = _bridge((scale * values[:, 0])[:, None], frame.segment_id, 1.0)[:, 0]
    common = _bridge((scale * global_values)[:, None], frame.segment_id, 1.0)[:, 0]
    idio_values = _with_jumps(rng, values[:, 1:], "crypto")
    idio = _bridge(
        scale[:, None] * shocks.symbol_boost * idio_values, frame.segment_id, IDIO_BRIDGE
    )
    paths = []
    for j, p in enumerate(profiles):
        unit = p.hourly_vol / 2.0
        weights = np.sqrt([p.factor_share, p.global_share, p.idio_share])
        noise = unit * (weights[0] * factor + weights[1] * common + weights[2] * idio[:, j])
        returns = p.trend_beta * frame.drift + noise + shocks.bar[:, j]
        log_close = log_p0[j] + np.cumsum(returns)
        log_open = np.r_[log_p0[j], log_close[:-1]]
        local_var = (
            weights[0] ** 2 * variances[:, 0]
            + weights[1] ** 2 * global_var
            + weights[2] ** 2 * variances[:, 1 + j] * shocks.symbol_boost[:, j] ** 2
        )
        sigma = unit * scale * np.sqrt(local_var)
        starts = np.zeros(n, dtype=bool)
        starts[0] = True
        boost = shocks.market_boost * shocks.symbol_boost[:, j]
        paths.append(
            _SymbolPath(log_open, log_close, sigma, shocks.bar[:, j], noise / sigma, starts, boost)
        )
    return paths


def _overnight_scale(times: pd.DatetimeIndex) -> np.ndarray:
    """Gap standard deviation (in bar units) at each session's first bar; 0 elsewhere."""
    k, _ = _session_positions(times)
    scale = np.zeros(len(times))
    firsts = np.flatnonzero(k == 0)[1:]
    if len(firsts) == 0:
        return scale
    closed_hours = (times[firsts] - times[firsts - 1] - BAR) / pd.Timedelta(hours=1)
    extra_days = np.maximum(0.0, (np.asarray(closed_hours, dtype=float) - 17.5) / 24.0)
    bars_per_day = 26.0
    scale[firsts] = np.sqrt(OVERNIGHT_VARIANCE * bars_per_day * (1.0 + 0.15 * extra_days))
    return scale


def _us_paths(
    frame: _MarketFrame,
    shocks: _Shocks,
    profiles: list[SymbolProfile],
    global_values: np.ndarray,
    global_var: np.ndarray,
    rngs: dict[str, np.random.Generator],
    log_p0: np.ndarray,
) -> list[_SymbolPath]:
    """Log-price paths of the US symbols on session bars, with overnight gaps."""
    n, m = len(frame.times), len(profiles)
    sectors = sorted({p.sector for p in profiles if p.sector is not None})
    values, variances = _garch(rngs["us_garch"], n, 1 + len(sectors) + m, "us")
    gap_z = rngs["gaps"].standard_t(T_DOF, size=(n, values.shape[1]))
    gap_z /= math.sqrt(T_DOF / (T_DOF - 2.0))
    gap_scale = _overnight_scale(frame.times)
    scale = frame.scale * shocks.market_boost
    first_idio = 1 + len(sectors)
    values[:, first_idio:] = _with_jumps(rngs["us_garch"], values[:, first_idio:], "us")
    bar_noise = scale[:, None] * values
    bar_noise[:, first_idio:] *= shocks.symbol_boost
    gap_noise = gap_scale[:, None] * np.sqrt(variances) * gap_z
    total = bar_noise + gap_noise
    fractions = np.r_[np.ones(1 + len(sectors)), np.full(m, IDIO_BRIDGE)]
    correction = total - np.column_stack(
        [
            _bridge(total[:, [c]], frame.segment_id, fractions[c])[:, 0]
            for c in range(total.shape[1])
        ]
    )
    bar_noise -= correction
    common = _bridge((scale * global_values)[:, None], frame.segment_id, 1.0)[:, 0]
    positions, _ = _session_positions(frame.times)
    paths = []
    for j, p in enumerate(profiles):
        unit = p.hourly_vol / 2.0
        s = 1 + sectors.index(p.sector)
        cols = [0, s, 1 + len(sectors) + j]
        shares = np.array([p.factor_share, p.sector_share, p.idio_share])
        weights = np.sqrt(shares)
        noise = unit * (bar_noise[:, cols] @ weights + math.sqrt(p.global_share) * common)
        gap = unit * (gap_noise[:, cols] @ weights) + shocks.gap[:, j]
        returns = p.trend_beta * frame.drift + noise + shocks.bar[:, j]
        log_close = log_p0[j] + np.cumsum(gap + returns)
        log_open = np.where(positions == 0, log_close - returns, np.r_[log_p0[j], log_close[:-1]])
        local_var = (
            shares[0] * variances[:, 0]
            + shares[1] * variances[:, s]
            + shares[2] * variances[:, cols[2]] * shocks.symbol_boost[:, j] ** 2
            + p.global_share * global_var
        )
        sigma = unit * scale * np.sqrt(local_var)
        jump = shocks.bar[:, j] + np.where(positions == 0, shocks.gap[:, j], 0.0)
        boost = shocks.market_boost * shocks.symbol_boost[:, j]
        paths.append(
            _SymbolPath(log_open, log_close, sigma, jump, noise / sigma, positions == 0, boost)
        )
    return paths


def _round(values: np.ndarray, decimals: int, mode: str = "nearest") -> np.ndarray:
    """Round to ``decimals`` places exactly as decimal numbers would be written."""
    factor = 10.0**decimals
    op = {"nearest": np.rint, "up": np.ceil, "down": np.floor}[mode]
    return op(values * factor) / factor


def _bridge_extreme(a: np.ndarray, b: np.ndarray, sigma: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Draw the maximum of a Brownian bridge from ``a`` to ``b`` with volatility ``sigma``."""
    return 0.5 * (a + b + np.sqrt((a - b) ** 2 - 2.0 * sigma**2 * np.log(u)))


def _ohlc(
    path: _SymbolPath, profile: SymbolProfile, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Rounded open/high/low/close with intrabar ranges drawn from a Brownian bridge."""
    d = profile.price_decimals
    u = 1.0 - rng.random((2, len(path.log_close)))
    wick = 0.35 * np.abs(path.jump) * rng.random(len(path.log_close))
    log_high = _bridge_extreme(path.log_open, path.log_close, path.sigma, u[0])
    log_low = -_bridge_extreme(-path.log_open, -path.log_close, path.sigma, u[1])
    log_high = log_high + np.where(path.jump > 0, wick, 0.0)
    log_low = log_low - np.where(path.jump < 0, wick, 0.0)
    close = _round(np.exp(path.log_close), d)
    open_ = _round(np.exp(path.log_open), d)
    continuing = np.flatnonzero(~path.new_session)
    open_[continuing] = close[continuing - 1]
    high = np.maximum(_round(np.exp(log_high), d, "up"), np.maximum(open_, close))
    low = np.minimum(_round(np.exp(log_low), d, "down"), np.minimum(open_, close))
    return {"open": open_, "high": high, "low": np.maximum(low, profile.tick), "close": close}


def _crypto_volume_profile(times: pd.DatetimeIndex) -> np.ndarray:
    hour = times.hour.to_numpy() + times.minute.to_numpy() / 60.0 + 0.125
    shape = (
        0.7 + 0.6 * np.exp(-((hour - 14.5) ** 2) / 18.0) + 0.2 * np.exp(-((hour - 8.0) ** 2) / 8.0)
    )
    shape = shape * np.where(times.day_of_week.to_numpy() >= 5, 0.65, 1.0)
    return shape / shape.mean()


def _us_volume_profile(times: pd.DatetimeIndex) -> np.ndarray:
    k, n = _session_positions(times)
    shape = 0.55 + 1.5 * np.exp(-k / 1.5) + 0.9 * np.exp(-(n - 1 - k) / 1.5)
    shape = shape * np.where(k == n - 1, 1.6, 1.0)
    return shape / shape.mean()


def _volume(
    path: _SymbolPath,
    close: np.ndarray,
    profile: SymbolProfile,
    shape: np.ndarray,
    regime: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Traded quantity per bar: intraday profile x activity (|return| surprise) x noise."""
    bars_per_day = 96.0 if profile.market == "crypto" else 26.0
    z = path.z + path.jump / path.sigma
    activity = np.sqrt(0.4 + 0.6 * np.minimum(z**2, 400.0)) * path.boost**VOLUME_BOOST
    noise = lfilter(
        [1.0], [1.0, -0.85], rng.standard_normal(len(close)) * 0.3 * math.sqrt(1 - 0.85**2)
    )
    regime_mult = np.array([VOLUME_REGIME[r] for r in regime])
    notional = (
        profile.daily_notional / bars_per_day * shape * activity * np.exp(noise) * regime_mult
    )
    return np.maximum(_round(notional / close, profile.volume_decimals), 0.0)


def _start_levels(
    spec: ScenarioSpec, profiles: list[SymbolProfile], rng: np.random.Generator
) -> np.ndarray:
    level = np.array(
        [spec.crypto_level if p.market == "crypto" else spec.us_level for p in profiles]
    )
    base = np.array([p.price for p in profiles])
    return np.log(base * level) + LEVEL_JITTER * rng.standard_normal(len(profiles))


def _bars_for(
    market: Market,
    timeline: Timeline,
    rngs: dict[str, np.random.Generator],
    global_values: np.ndarray,
    global_var: np.ndarray,
    log_p0: np.ndarray,
) -> pd.DataFrame:
    profiles = [
        PROFILES[s]
        for s in (DEFAULT_UNIVERSE.crypto if market == "crypto" else DEFAULT_UNIVERSE.us)
    ]
    window = timeline.window
    grid = crypto_bar_times(window)
    if market == "crypto":
        times = grid
        frame = _market_frame(times, timeline.crypto, _crypto_seasonality(times))
        shocks = _market_shocks(timeline.shocks, market, times, profiles)
        paths = _crypto_paths(
            frame, shocks, profiles, global_values, global_var, rngs["crypto_garch"], log_p0
        )
        volume_shape = _crypto_volume_profile(times)
    else:
        times = us_bar_times(nyse_sessions(window.history_start, window.end))
        seasonality = _us_seasonality(times) * _session_vol_state(times, rngs["gaps"])
        frame = _market_frame(times, timeline.us, _normalise_rms(seasonality))
        shocks = _market_shocks(timeline.shocks, market, times, profiles)
        on_grid = grid.searchsorted(times)
        paths = _us_paths(
            frame, shocks, profiles, global_values[on_grid], global_var[on_grid], rngs, log_p0
        )
        volume_shape = _us_volume_profile(times)
    frames = []
    for p, path in zip(profiles, paths, strict=True):
        ohlc = _ohlc(path, p, rngs["ranges"])
        volume = _volume(path, ohlc["close"], p, volume_shape, frame.regime, rngs["volume"])
        frames.append(pd.DataFrame({"symbol": p.symbol, "ts": times, **ohlc, "volume": volume}))
    return pd.concat(frames, ignore_index=True)


def _bars(
    spec: ScenarioSpec, timeline: Timeline, rngs: dict[str, np.random.Generator]
) -> pd.DataFrame:
    """All bars of the scenario, sorted by (symbol, ts)."""
    grid = crypto_bar_times(timeline.window)
    global_values, global_var = _garch(rngs["crypto_garch"], len(grid), 1, "crypto")
    profiles = [PROFILES[s] for s in DEFAULT_UNIVERSE.symbols]
    log_p0 = _start_levels(spec, profiles, rngs["levels"])
    n_crypto = len(DEFAULT_UNIVERSE.crypto)
    parts = [
        _bars_for(
            "crypto", timeline, rngs, global_values[:, 0], global_var[:, 0], log_p0[:n_crypto]
        ),
        _bars_for("us", timeline, rngs, global_values[:, 0], global_var[:, 0], log_p0[n_crypto:]),
    ]
    bars = pd.concat(parts, ignore_index=True)
    bars["symbol"] = bars["symbol"].astype("str")
    bars["ts"] = bars["ts"].astype("datetime64[ns, UTC]")
    for col in ("open", "high", "low", "close", "volume"):
        bars[col] = bars[col].astype("float64")
    return bars.sort_values(["symbol", "ts"], kind="mergesort").reset_index(drop=True)[
        list(BAR_COLUMNS)
    ]


def _meta(spec: ScenarioSpec, seed: int, timeline: Timeline, bars: pd.DataFrame) -> dict:
    window = timeline.window
    regimes = timeline.regime_entries()
    return {
        "name": spec.name,
        "description": spec.description,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
        "start": iso(window.start),
        "end": iso(window.end),
        "history_start": iso(window.history_start),
        "bar_interval": BAR_INTERVAL,
        "universe": {"crypto": list(DEFAULT_UNIVERSE.crypto), "us": list(DEFAULT_UNIVERSE.us)},
        "ticks": {s: PROFILES[s].tick for s in DEFAULT_UNIVERSE.symbols},
        "regimes": regimes,
        "calibration": measure(bars, regimes),
    }


def generate_scenario(name: str, seed: int | None = None, days: int | None = None) -> Scenario:
    """Generate scenario ``name`` in memory (deterministic for a given ``seed`` and ``days``).

    ``seed`` defaults to the scenario's fixed seed; ``days`` shortens the decision window (the
    14 days of history stay) and is meant for quick tests.
    """
    spec = SPECS[check_name(name)]
    seed = spec.seed if seed is None else int(seed)
    timeline = build_timeline(spec, days)
    rngs = _streams(seed)
    bars = _bars(spec, timeline, rngs)
    news = build_news(spec.name, timeline, bars, rngs["news"])
    return Scenario(spec.name, bars, news, _meta(spec, seed, timeline, bars))


def write_scenario(scenario: Scenario, out_dir: Path | str) -> list[Path]:
    """Write the three files of ``scenario`` to ``out_dir``; return their paths."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    bars_path = directory / f"{scenario.name}.parquet"
    news_path = directory / f"{scenario.name}.news.jsonl"
    meta_path = directory / f"{scenario.name}.meta.json"
    scenario.bars.to_parquet(bars_path, engine="pyarrow", compression="zstd", index=False)
    lines = (json.dumps(item.to_json(), ensure_ascii=False) for item in scenario.news)
    news_path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    meta_path.write_text(
        json.dumps(scenario.meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return [bars_path, news_path, meta_path]


def regenerate(names: Sequence[str] | None = None, out_dir: Path | str | None = None) -> list[Path]:
    """Regenerate the named scenarios (all by default) into ``out_dir`` (the shipped folder).

    A scenario whose measured statistics miss :data:`~.calibration.TARGETS` is not written.
    """
    chosen = list(SCENARIO_NAMES) if names is None else [check_name(n) for n in names]
    directory = scenario_dir() if out_dir is None else Path(out_dir)
    written: list[Path] = []
    for name in chosen:
        scenario = generate_scenario(name)
        failures = check_targets(scenario.meta["calibration"])
        if failures:
            raise ValueError(f"scenario {name!r} misses its calibration targets: {failures}")
        written.extend(write_scenario(scenario, directory))
    load_scenario.cache_clear()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: rebuild scenario files and print their paths and sizes."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.market.scenarios.generator",
        description="Regenerate the bundled offline market scenarios.",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIO_NAMES,
        metavar="NAME",
        help=f"scenario to rebuild (repeatable; default: all of {', '.join(SCENARIO_NAMES)})",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output directory (default: the shipped data folder)"
    )
    args = parser.parse_args(argv)
    for path in regenerate(args.scenario, args.out):
        print(f"{path}\t{path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
