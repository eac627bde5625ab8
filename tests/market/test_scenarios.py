"""Tests of the bundled offline market: shipped files, calibration, calendar, news, determinism."""

from __future__ import annotations

import json
import math
import re
import warnings
from functools import cache
from itertools import pairwise

import exchange_calendars as xcals
import numpy as np
import pandas as pd
import pytest

from benchmark.market.clock import as_utc
from benchmark.market.scenarios import (
    BAR_COLUMNS,
    SCENARIO_NAMES,
    NewsItem,
    Scenario,
    list_scenarios,
    load_scenario,
    read_scenario,
    scenario_dir,
)
from benchmark.market.scenarios.calibration import (
    LARGE_CAPS,
    abs_acf1,
    check_targets,
    excess_kurtosis,
    market_return,
    measure,
    session_hour_starts,
)
from benchmark.market.scenarios.generator import generate_scenario, main, write_scenario
from benchmark.market.scenarios.specs import PROFILES, SPECS
from benchmark.market.scenarios.timeline import build_timeline
from benchmark.market.universe import DEFAULT_UNIVERSE

CRYPTO = DEFAULT_UNIVERSE.crypto
US = DEFAULT_UNIVERSE.us
BAR = pd.Timedelta(minutes=15)
UTC = "UTC"

PRICE_BANDS = {
    "BTC": (60_000, 120_000),
    "ETH": (2_000, 4_000),
    "SOL": (80, 250),
    "BNB": (500, 900),
    "XRP": (1, 3),
    "DOGE": (0.1, 0.4),
    "AAPL": (180, 260),
    "NVDA": (100, 200),
}
"""Plausible late-2025/2026 price ranges stated in SCENARIOS.md."""


@cache
def calibration_of(name: str) -> dict:
    """Calibration recomputed from the shipped bars (not read from the meta file)."""
    scenario = load_scenario(name)
    return measure(scenario.bars, scenario.meta["regimes"])


def ts(text: str) -> pd.Timestamp:
    """A UTC timestamp (naive text is read as UTC)."""
    return as_utc(text)


def xnys(start: str, end: str) -> xcals.ExchangeCalendar:
    """The exchange_calendars NYSE calendar (its pandas-3.1 deprecation noise silenced)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Series.values returning an ndarray")
        return xcals.get_calendar("XNYS", start=start, end=end)


def nyse_bar_times(start: pd.Timestamp, end: pd.Timestamp) -> pd.DatetimeIndex:
    """Expected US bar opens, straight from exchange_calendars."""
    cal = xnys(
        (start - pd.Timedelta(days=3)).strftime("%Y-%m-%d"),
        (end + pd.Timedelta(days=3)).strftime("%Y-%m-%d"),
    )
    sched = cal.schedule
    sched = sched[(sched["open"] >= start) & (sched["close"] <= end)]
    parts = [
        pd.date_range(o, c, freq=BAR, inclusive="left")
        for o, c in zip(sched["open"], sched["close"], strict=True)
    ]
    return parts[0].append(parts[1:]).astype("datetime64[ns, UTC]")


# --- public API -----------------------------------------------------------------------------


def test_scenario_names_and_listing() -> None:
    assert SCENARIO_NAMES == ("default", "bull", "bear", "chop", "flash-crash")
    assert list_scenarios() == list(SCENARIO_NAMES)
    assert tuple(SPECS) == SCENARIO_NAMES


def test_unknown_scenario_is_rejected_with_the_valid_names() -> None:
    with pytest.raises(ValueError, match="valid scenarios: default, bull, bear, chop, flash-crash"):
        load_scenario("sideways")
    with pytest.raises(ValueError, match="unknown scenario 'sideways'"):
        generate_scenario("sideways")


def test_load_scenario_is_cached_and_typed() -> None:
    first = load_scenario("default")
    assert load_scenario("default") is first
    assert isinstance(first, Scenario)
    assert first.start == pd.Timestamp("2026-03-16", tz=UTC)
    assert first.end == pd.Timestamp("2026-04-15", tz=UTC)
    assert first.history_start == pd.Timestamp("2026-03-02", tz=UTC)
    assert first.symbols == tuple(sorted(DEFAULT_UNIVERSE.symbols))
    assert all(isinstance(item, NewsItem) for item in first.news)


def test_shipped_files_exist_and_are_small() -> None:
    directory = scenario_dir()
    for name in SCENARIO_NAMES:
        parquet = directory / f"{name}.parquet"
        assert parquet.stat().st_size < 4 * 1024 * 1024
        assert (directory / f"{name}.news.jsonl").is_file()
        assert (directory / f"{name}.meta.json").is_file()
        assert parquet.read_bytes()[:4] == b"PAR1"


def test_news_item_json_round_trip() -> None:
    item = load_scenario("bear").news[10]
    line = json.dumps(item.to_json())
    assert NewsItem.from_json(json.loads(line)) == item
    assert item.to_json()["published_at"].endswith("Z")


# --- meta and regimes -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_meta_describes_the_window(name: str) -> None:
    meta = load_scenario(name).meta
    spec = SPECS[name]
    assert meta["name"] == name
    assert meta["seed"] == spec.seed
    assert meta["generator_version"] == "1.0.0"
    assert meta["bar_interval"] == "15min"
    start, end, history = ts(meta["start"]), ts(meta["end"]), ts(meta["history_start"])
    assert start == start.normalize()
    assert end - start == pd.Timedelta(days=30)
    assert start - history == pd.Timedelta(days=14)
    assert meta["description"]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_market_regimes_tile_the_bars_and_the_window(name: str) -> None:
    meta = load_scenario(name).meta
    history, end = ts(meta["history_start"]), ts(meta["end"])
    allowed = {"uptrend", "downtrend", "steady", "shock"}
    for entry in meta["regimes"]:
        assert entry["regime"] in allowed
        assert entry["scope"] in {"crypto", "us", "all", *DEFAULT_UNIVERSE.symbols}
        assert ts(entry["start"]) < ts(entry["end"])
        assert entry["description"]
    for market in ("crypto", "us"):
        entries = sorted(
            (e for e in meta["regimes"] if e["scope"] in (market, "all")), key=lambda e: e["start"]
        )
        assert ts(entries[0]["start"]) == history
        assert ts(entries[-1]["end"]) == end
        for before, after in pairwise(entries):
            assert before["end"] == after["start"], (market, before, after)


def test_carving_a_shock_shrinks_the_leg_in_proportion() -> None:
    timeline = build_timeline(SPECS["default"])
    shock = [s for s in timeline.crypto if s.regime == "shock"]
    assert [(s.start, s.end, s.scope) for s in shock] == [
        (ts("2026-03-31T18:00"), ts("2026-03-31T22:00"), "all")
    ]
    after = next(s for s in timeline.crypto if s.start == ts("2026-03-31T22:00"))
    # The leg ran 174 h (31 Mar 18:00 -> 8 Apr 00:00); 4 h went to the shock.
    assert after.regime == "downtrend"
    assert after.move == pytest.approx(-0.08 * 170 / 174)
    assert len([e for e in timeline.regime_entries() if e["scope"] == "all"]) == 1


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_trend_legs_move_the_market_their_way(name: str) -> None:
    scenario = load_scenario(name)
    checked = 0
    for entry in scenario.meta["regimes"]:
        if entry["scope"] not in ("crypto", "us"):
            continue
        value = market_return(scenario.bars, entry["scope"], ts(entry["start"]), ts(entry["end"]))
        if value is None:
            continue
        if entry["regime"] in ("uptrend", "downtrend") and abs(entry["move"]) >= 0.015:
            assert math.copysign(1.0, value) == math.copysign(1.0, entry["move"]), entry
            checked += 1
        elif entry["regime"] == "steady":
            assert abs(value) < 0.05, entry
    assert checked >= 1


def test_default_window_has_a_shock_and_the_good_friday_holiday() -> None:
    scenario = load_scenario("default")
    assert any(e["regime"] == "shock" and e["scope"] == "all" for e in scenario.meta["regimes"])
    bars = scenario.bars
    good_friday = (bars["ts"] >= ts("2026-04-03")) & (bars["ts"] < ts("2026-04-04"))
    assert not bars[good_friday & bars["symbol"].isin(US)].shape[0]
    assert bars[good_friday & (bars["symbol"] == "BTC")].shape[0] == 96


# --- bars -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_bar_schema_and_order(name: str) -> None:
    bars = load_scenario(name).bars
    assert tuple(bars.columns) == BAR_COLUMNS
    assert str(bars["ts"].dtype) == "datetime64[ns, UTC]"
    for col in ("open", "high", "low", "close", "volume"):
        assert bars[col].dtype == np.float64
    assert set(bars["symbol"]) == set(DEFAULT_UNIVERSE.symbols)
    order = bars[["symbol", "ts"]]
    assert order.equals(order.sort_values(["symbol", "ts"]).reset_index(drop=True))
    assert not bars.duplicated(["symbol", "ts"]).any()
    assert ((bars["ts"].dt.minute % 15) == 0).all()
    assert (bars["ts"].dt.second == 0).all()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_ohlc_is_consistent_and_positive(name: str) -> None:
    bars = load_scenario(name).bars
    body_high = bars[["open", "close"]].max(axis=1)
    body_low = bars[["open", "close"]].min(axis=1)
    assert (bars["high"] >= body_high).all()
    assert (bars["low"] <= body_low).all()
    assert (bars[["open", "high", "low", "close"]] > 0).all().all()
    assert (bars["volume"] >= 0).all()
    assert np.isfinite(bars[["open", "high", "low", "close", "volume"]].to_numpy()).all()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_each_open_is_the_previous_close_within_a_session(name: str) -> None:
    bars = load_scenario(name).bars
    same_symbol = bars["symbol"].eq(bars["symbol"].shift())
    contiguous = bars["ts"].diff().eq(BAR) & same_symbol
    assert (bars.loc[contiguous, "open"] == bars["close"].shift()[contiguous]).all()
    # Crypto trades continuously: every crypto bar after the first continues the previous one.
    crypto = bars["symbol"].isin(CRYPTO)
    assert (contiguous | ~same_symbol)[crypto].all()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_crypto_bars_cover_every_quarter_hour(name: str) -> None:
    scenario = load_scenario(name)
    expected = pd.date_range(scenario.history_start, scenario.end, freq=BAR, inclusive="left")
    for symbol in CRYPTO:
        got = scenario.bars.loc[scenario.bars["symbol"] == symbol, "ts"]
        assert len(got) == len(expected) == 44 * 96
        assert (got.to_numpy() == expected.astype("datetime64[ns, UTC]").to_numpy()).all()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_us_bars_are_exactly_the_nyse_regular_sessions(name: str) -> None:
    scenario = load_scenario(name)
    expected = nyse_bar_times(scenario.history_start, scenario.end)
    for symbol in US:
        got = pd.DatetimeIndex(scenario.bars.loc[scenario.bars["symbol"] == symbol, "ts"])
        assert got.equals(expected), symbol
    us_ts = pd.DatetimeIndex(scenario.bars.loc[scenario.bars["symbol"] == "AAPL", "ts"])
    assert (us_ts.day_of_week < 5).all()
    cal = xnys("2025-10-01", "2026-07-01")
    sessions = set(
        cal.sessions_in_range(
            scenario.history_start.tz_localize(None).normalize(),
            scenario.end.tz_localize(None).normalize(),
        )
    )
    assert set(us_ts.tz_localize(None).normalize()) <= sessions


def test_us_sessions_follow_daylight_saving_and_early_closes() -> None:
    default = load_scenario("default").bars
    aapl = default.loc[default["symbol"] == "AAPL", "ts"]
    first_of = aapl.groupby(aapl.dt.date).min()
    # US clocks moved forward on 8 March 2026, so the 09:30 New York open moved to 13:30 UTC.
    assert first_of[pd.Timestamp("2026-03-06").date()] == ts("2026-03-06T14:30")
    assert first_of[pd.Timestamp("2026-03-09").date()] == ts("2026-03-09T13:30")
    bull = load_scenario("bull").bars
    nvda = bull.loc[bull["symbol"] == "NVDA", "ts"]
    day_after_thanksgiving = nvda[nvda.dt.date == pd.Timestamp("2025-11-28").date()]
    assert day_after_thanksgiving.max() == ts("2025-11-28T17:45")  # 13:00 New York close
    assert len(day_after_thanksgiving) == 14
    assert not (nvda.dt.date == pd.Timestamp("2025-11-27").date()).any()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_price_levels_are_realistic(name: str) -> None:
    bars = load_scenario(name).bars
    lows = bars.groupby("symbol")["low"].min()
    highs = bars.groupby("symbol")["high"].max()
    for symbol, (low, high) in PRICE_BANDS.items():
        assert low <= lows[symbol] and highs[symbol] <= high, symbol
    for symbol in DEFAULT_UNIVERSE.symbols:
        reference = PROFILES[symbol].price
        assert 0.5 * reference <= lows[symbol] and highs[symbol] <= 1.75 * reference, symbol


def test_flash_crash_drops_crypto_within_an_hour_and_recovers_part() -> None:
    scenario = load_scenario("flash-crash")
    bars = scenario.bars.set_index(["symbol", "ts"]).sort_index()
    shock = next(e for e in scenario.meta["regimes"] if e["regime"] == "shock")
    at, end = ts(shock["start"]), ts(shock["end"])
    assert shock["scope"] == "all" and end - at == pd.Timedelta(hours=6)
    btc = bars.loc["BTC"]
    before = btc.loc[at - BAR, "close"]
    first_hour = btc.loc[at : at + pd.Timedelta(minutes=45)]
    trough = first_hour["low"].min()
    assert trough / before - 1 < -0.08
    assert first_hour["close"].iloc[-1] / before - 1 < -0.06
    after = btc.loc[end - BAR, "close"]
    assert trough < after < before
    assert (after - trough) / (before - trough) > 0.25
    crash_volume = first_hour["volume"].mean()
    assert crash_volume > 3 * btc["volume"].median()
    us_before = np.array([bars.loc[(s, at - BAR), "close"] for s in US])
    us_after = np.array([bars.loc[(s, at + pd.Timedelta(minutes=45)), "close"] for s in US])
    assert np.log(us_after / us_before).mean() < -0.015


# --- calibration ----------------------------------------------------------------------------


def test_calibration_helpers_on_hand_computed_series() -> None:
    assert excess_kurtosis(np.array([1.0, -1.0, 1.0, -1.0])) == pytest.approx(-2.0)
    # mean 1; m2 = (9 * 1 + 81) / 10 = 9; m4 = (9 * 1 + 6561) / 10 = 657; 657 / 81 - 3.
    spike = np.array([0.0] * 9 + [10.0])
    assert excess_kurtosis(spike) == pytest.approx(657 / 81 - 3)
    # |x| = 1 1 2 2 1 1 -> pairs (1,1) (1,2) (2,2) (2,1) (1,1): covariance 0.2, variances 1.2.
    x = np.array([1.0, -1.0, 2.0, -2.0, 1.0, -1.0])
    assert abs_acf1(x, np.ones(6, dtype=bool)) == pytest.approx(1 / 6)


def test_session_hours_skip_partial_blocks() -> None:
    full = pd.date_range("2026-03-06T14:30", periods=26, freq=BAR, tz=UTC)
    short = pd.date_range("2026-03-09T13:30", periods=14, freq=BAR, tz=UTC)
    starts = session_hour_starts(full.append(short))
    assert len(starts) == 6 + 3
    assert starts[0] == ts("2026-03-06T14:30") and starts[5] == ts("2026-03-06T19:30")
    assert starts[-1] == ts("2026-03-09T15:30")


def test_market_return_uses_the_last_close_before_each_end() -> None:
    t0 = ts("2026-01-01T00:00")
    bars = pd.DataFrame(
        {
            "symbol": ["BTC"] * 3,
            "ts": [t0, t0 + BAR, t0 + 2 * BAR],
            "open": [100.0, 100.0, 110.0],
            "high": [101.0, 111.0, 122.0],
            "low": [99.0, 99.0, 109.0],
            "close": [100.0, 110.0, 121.0],
            "volume": [1.0, 1.0, 1.0],
        }
    )
    assert market_return(bars, "crypto", t0 + BAR, t0 + 3 * BAR) == pytest.approx(math.log(1.21))
    assert market_return(bars, "crypto", t0, t0 + BAR) == pytest.approx(0.0)
    assert market_return(bars, "us", t0, t0 + BAR) is None


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_calibration_targets_are_met(name: str) -> None:
    cal = calibration_of(name)
    assert check_targets(cal) == []
    sym = cal["symbols"]
    assert 0.003 <= sym["BTC"]["hourly_std"] <= 0.012
    assert sym["BTC"]["excess_kurtosis"] > 1.0
    assert cal["crypto"]["median_excess_kurtosis"] > 1.0
    assert cal["us"]["pooled_excess_kurtosis"] > 1.0
    assert sym["BTC"]["abs_acf1"] > 0.05
    assert cal["crypto"]["mean_abs_acf1"] > 0.05
    assert cal["us"]["pooled_abs_acf1"] > 0.05
    for symbol in LARGE_CAPS:
        assert 0.0015 <= sym[symbol]["hourly_std"] <= 0.008, symbol
    assert 0.55 <= cal["crypto"]["mean_pair_corr"] <= 0.85
    assert cal["crypto"]["min_pair_corr"] >= 0.35
    assert 0.25 <= cal["us"]["mean_pair_corr"] <= 0.60
    cross = cal["crypto_us"]["mean_corr"]
    assert -0.05 <= cross <= 0.25
    assert cross < cal["us"]["mean_pair_corr"] < cal["crypto"]["mean_pair_corr"]
    assert cal["volume"]["us_open_volume_ratio"] > 1.5
    assert cal["volume"]["us_close_volume_ratio"] > 1.2
    assert cal["volume"]["crypto_peak_trough_volume_ratio"] > 1.2
    assert cal["volume"]["us_gap_share"] > 0.9


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_meta_calibration_matches_the_shipped_bars(name: str) -> None:
    stored = load_scenario(name).meta["calibration"]
    fresh = calibration_of(name)
    assert stored["symbols"]["BTC"] == pytest.approx(fresh["symbols"]["BTC"], rel=1e-6)
    assert stored["crypto"] == pytest.approx(fresh["crypto"], rel=1e-6)
    assert stored["us"] == pytest.approx(fresh["us"], rel=1e-6)
    assert stored["regime_returns"] == fresh["regime_returns"]


# --- news -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_news_is_sorted_well_formed_and_inside_the_window(name: str) -> None:
    scenario = load_scenario(name)
    times = [item.published_at for item in scenario.news]
    assert times == sorted(times)
    assert scenario.history_start <= times[0] and times[-1] < scenario.end
    assert len({item.id for item in scenario.news}) == len(scenario.news)
    for item in scenario.news:
        assert item.id.startswith(f"{name}-")
        assert str(item.published_at.tz) == UTC
        assert item.market in ("crypto", "us", "macro")
        assert item.source.startswith("synthetic:") and len(item.source) > len("synthetic:")
        assert item.body.startswith("[Simulated report")
        assert item.headline and set(item.symbols) <= set(DEFAULT_UNIVERSE.symbols)
    lines = (scenario_dir() / f"{name}.news.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert set(first) == {"id", "published_at", "headline", "body", "symbols", "market", "source"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["published_at"])


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_news_volume_per_day(name: str) -> None:
    scenario = load_scenario(name)
    days = pd.date_range(scenario.history_start, scenario.end, freq="D", inclusive="left")
    counts = pd.Series([item.published_at.normalize() for item in scenario.news]).value_counts()
    per_day = counts.reindex(days, fill_value=0)
    assert per_day.min() >= 3
    assert per_day.max() <= 12
    assert 3 <= per_day.mean() <= 10


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_shock_news_breaks_at_the_shock_never_before(name: str) -> None:
    scenario = load_scenario(name)
    shocks = [e for e in scenario.meta["regimes"] if e["regime"] == "shock"]
    assert shocks
    for shock in shocks:
        start = ts(shock["start"])
        matching = [n for n in scenario.news if n.headline == shock["headline"]]
        assert len(matching) == 1
        assert start <= matching[0].published_at <= start + pd.Timedelta(minutes=10)
        follow_ups = [
            n
            for n in scenario.news
            if n.headline.endswith(("after the news", "since the event"))
            and start < n.published_at < start + pd.Timedelta(hours=30)
        ]
        assert len(follow_ups) >= 2


def test_crypto_wrap_quotes_the_actual_close() -> None:
    scenario = load_scenario("default")
    btc = scenario.bars[scenario.bars["symbol"] == "BTC"].set_index("ts")
    wraps = [n for n in scenario.news if n.body.count("Crypto wrap for") == 1]
    assert len(wraps) == 43  # one per completed UTC day of the 44-day span
    for item in wraps[:5]:
        day = item.published_at.normalize() - pd.Timedelta(days=1)
        close = btc.loc[day + pd.Timedelta(hours=23, minutes=45), "close"]
        opened = (
            btc.loc[day - BAR, "close"] if day > scenario.history_start else btc["open"].iloc[0]
        )
        assert f"BTC ${close:,.0f} ({(close / opened - 1) * 100:+.1f}%)" in item.body
        assert item.published_at > day + pd.Timedelta(days=1)


def test_holiday_notice_precedes_good_friday() -> None:
    news = load_scenario("default").news
    notice = [
        n for n in news if n.headline.startswith("US stock markets closed on Friday 03 April")
    ]
    assert len(notice) == 1
    assert "Good Friday" in notice[0].headline
    assert ts("2026-04-02T20:00") < notice[0].published_at < ts("2026-04-03")


# --- generation -----------------------------------------------------------------------------


def test_generation_is_deterministic_under_a_seed() -> None:
    first = generate_scenario("default", seed=123, days=2)
    second = generate_scenario("default", seed=123, days=2)
    pd.testing.assert_frame_equal(first.bars, second.bars, check_exact=True)
    assert first.news == second.news
    assert first.meta == second.meta
    assert first.end == ts("2026-03-18") and first.meta["seed"] == 123
    other = generate_scenario("default", seed=124, days=2)
    assert not np.array_equal(first.bars["close"].to_numpy(), other.bars["close"].to_numpy())


def test_days_must_stay_inside_the_scenario() -> None:
    with pytest.raises(ValueError, match="days must be between 1 and 30"):
        generate_scenario("bull", days=0)
    with pytest.raises(ValueError, match="days must be between 1 and 30"):
        generate_scenario("bull", days=31)


def test_short_window_drops_later_shocks(tmp_path) -> None:
    scenario = generate_scenario("flash-crash", days=3)
    assert not any(e["regime"] == "shock" for e in scenario.meta["regimes"])
    assert scenario.bars["ts"].max() < scenario.end
    paths = write_scenario(scenario, tmp_path)
    assert [p.name for p in paths] == [
        "flash-crash.parquet",
        "flash-crash.news.jsonl",
        "flash-crash.meta.json",
    ]
    again = read_scenario(tmp_path, "flash-crash")
    pd.testing.assert_frame_equal(again.bars, scenario.bars, check_exact=True)
    assert again.news == scenario.news
    assert again.meta == scenario.meta


def _assert_same_bars(shipped: pd.DataFrame, fresh: pd.DataFrame, ticks: dict[str, float]) -> None:
    """Equal bars; at most a one-tick rounding flip (floating-point libraries differ by machine)."""
    assert shipped[["symbol", "ts"]].equals(fresh[["symbol", "ts"]])
    tick = shipped["symbol"].map(ticks).to_numpy()
    for col in ("open", "high", "low", "close"):
        diff = np.abs(shipped[col].to_numpy() - fresh[col].to_numpy())
        assert (diff <= tick * 1.000001).all(), col
        assert (diff == 0).mean() > 0.999, col
    volume = np.abs(shipped["volume"].to_numpy() - fresh["volume"].to_numpy())
    assert (volume <= 1e-6 * shipped["volume"].to_numpy() + 1.0).all()
    assert (volume == 0).mean() > 0.999


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_shipped_scenario_equals_a_fresh_regeneration(name: str) -> None:
    shipped, fresh = load_scenario(name), generate_scenario(name)
    _assert_same_bars(shipped.bars, fresh.bars, shipped.meta["ticks"])
    assert [(n.id, n.published_at) for n in shipped.news] == [
        (n.id, n.published_at) for n in fresh.news
    ]
    assert [n.headline for n in shipped.news] == [n.headline for n in fresh.news]
    assert shipped.meta["regimes"] == fresh.meta["regimes"]


def test_command_line_writes_the_three_files(tmp_path, capsys) -> None:
    assert main(["--scenario", "chop", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["chop.meta.json", "chop.news.jsonl", "chop.parquet"]
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 3 and all(line.endswith(" bytes") for line in printed)
    written = read_scenario(tmp_path, "chop")
    _assert_same_bars(load_scenario("chop").bars, written.bars, written.meta["ticks"])
