"""Declarative inputs of the synthetic market: symbol profiles and the named scenarios.

Nothing here computes prices. A :class:`SymbolProfile` fixes how one instrument behaves (price
level, volatility, how much of its variance comes from the market, sector and cross-asset
factors, how strongly it follows regime drift and shocks, tick size and typical turnover). A
:class:`ScenarioSpec` fixes a window and its regime timeline: per market a chain of
:class:`Leg` values that tile the bars from ``history_start`` to ``end``, plus :class:`Shock`
events that are carved out of those legs (market shocks) or laid over a single symbol.

All times are UTC. Log moves are natural-log returns of the market factor for a symbol whose
``trend_beta`` is 1; every symbol receives ``trend_beta`` times the move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchmark.market.universe import Market

Regime = Literal["uptrend", "downtrend", "steady", "shock"]
Sector = Literal["tech", "defensive", "financials", "cyclical", "rates"]

HISTORY_DAYS = 14
"""Days of bars before the first decision time, so that indicators have history."""


@dataclass(frozen=True)
class SymbolProfile:
    """How one instrument behaves in the generator.

    The variance shares ``factor_share + sector_share + global_share`` must stay below 1; the
    rest is idiosyncratic. ``hourly_vol`` is the target standard deviation of one-hour log
    returns (inside the regular session for US equities).
    """

    symbol: str
    market: Market
    price: float
    hourly_vol: float
    factor_share: float
    global_share: float
    trend_beta: float
    price_decimals: int
    daily_notional: float
    volume_decimals: int
    sector: Sector | None = None
    sector_share: float = 0.0

    def __post_init__(self) -> None:
        common = self.factor_share + self.sector_share + self.global_share
        if not 0.0 < common < 1.0:
            raise ValueError(f"{self.symbol}: factor shares must sum to (0, 1), got {common}")
        if (self.sector is None) != (self.sector_share == 0.0):
            raise ValueError(f"{self.symbol}: a sector share needs a sector and vice versa")
        if self.price <= 0 or self.hourly_vol <= 0 or self.price_decimals < 0:
            raise ValueError(f"{self.symbol}: price and volatility must be positive")

    @property
    def tick(self) -> float:
        """Price increment: prices are rounded to ``price_decimals`` decimal places."""
        return 10.0**-self.price_decimals

    @property
    def idio_share(self) -> float:
        """Share of variance that is specific to this symbol."""
        return 1.0 - self.factor_share - self.sector_share - self.global_share


def _crypto(
    symbol: str,
    price: float,
    vol: float,
    factor: float,
    beta: float,
    price_decimals: int,
    notional: float,
    volume_decimals: int,
) -> SymbolProfile:
    return SymbolProfile(
        symbol,
        "crypto",
        price,
        vol,
        factor,
        0.12,
        beta,
        price_decimals,
        notional,
        volume_decimals,
    )


def _equity(
    symbol: str,
    price: float,
    vol: float,
    factor: float,
    sector: Sector,
    sector_share: float,
    beta: float,
    notional: float,
    global_share: float = 0.15,
) -> SymbolProfile:
    return SymbolProfile(
        symbol,
        "us",
        price,
        vol,
        factor,
        global_share,
        beta,
        2,
        notional,
        0,
        sector,
        sector_share,
    )


PROFILES: dict[str, SymbolProfile] = {
    p.symbol: p
    for p in (
        _crypto("BTC", 90_000.0, 0.0060, 0.74, 1.00, 1, 2.5e9, 4),
        _crypto("ETH", 2_700.0, 0.0080, 0.68, 1.20, 2, 1.2e9, 3),
        _crypto("SOL", 150.0, 0.0100, 0.56, 1.45, 3, 4.0e8, 2),
        _crypto("BNB", 750.0, 0.0065, 0.49, 0.85, 2, 1.5e8, 3),
        _crypto("XRP", 1.75, 0.0095, 0.46, 1.30, 5, 2.5e8, 0),
        _crypto("DOGE", 0.20, 0.0110, 0.46, 1.55, 6, 2.0e8, 0),
        _equity("AAPL", 235.0, 0.0045, 0.28, "tech", 0.15, 1.00, 1.0e10),
        _equity("NVDA", 150.0, 0.0080, 0.24, "tech", 0.20, 1.60, 3.0e10),
        _equity("GOOGL", 250.0, 0.0055, 0.26, "tech", 0.15, 1.15, 6.0e9),
        _equity("META", 650.0, 0.0060, 0.26, "tech", 0.15, 1.30, 1.0e10),
        _equity("AMZN", 225.0, 0.0055, 0.28, "tech", 0.15, 1.20, 8.0e9),
        _equity("TSLA", 420.0, 0.0100, 0.18, "tech", 0.12, 1.80, 2.5e10),
        _equity("PG", 150.0, 0.0030, 0.21, "defensive", 0.20, 0.40, 1.2e9, 0.12),
        _equity("JNJ", 190.0, 0.0030, 0.18, "defensive", 0.20, 0.45, 1.4e9, 0.12),
        _equity("UNH", 330.0, 0.0055, 0.18, "defensive", 0.15, 0.70, 3.0e9, 0.12),
        _equity("JPM", 300.0, 0.0045, 0.30, "financials", 0.18, 1.05, 2.5e9),
        _equity("V", 340.0, 0.0040, 0.29, "financials", 0.18, 0.90, 2.0e9),
        _equity("BA", 210.0, 0.0065, 0.21, "cyclical", 0.12, 1.25, 1.6e9),
        _equity("XOM", 115.0, 0.0045, 0.18, "cyclical", 0.15, 0.75, 2.0e9, 0.12),
        _equity("LIN", 440.0, 0.0038, 0.26, "cyclical", 0.15, 0.85, 1.0e9),
        _equity("NEE", 80.0, 0.0048, 0.18, "rates", 0.25, 0.60, 1.0e9, 0.12),
        _equity("AMT", 185.0, 0.0050, 0.18, "rates", 0.25, 0.70, 6.0e8, 0.12),
        _equity("PLD", 125.0, 0.0050, 0.21, "rates", 0.25, 0.95, 5.0e8, 0.12),
    )
}
"""Profiles of the default 23-symbol universe, keyed by symbol."""


@dataclass(frozen=True)
class Leg:
    """One stretch of a market's regime timeline, ending (exclusive) at ``until``.

    A leg starts where the previous one ends (the first at ``history_start``). ``move`` is the
    log move of the market factor over the whole leg; ``vol`` scales volatility inside it.
    """

    until: str
    regime: Regime
    move: float
    description: str
    vol: float = 1.0


@dataclass(frozen=True)
class Shock:
    """A sudden jump: a crash (or spike) over ``crash_bars`` bars, then a partial rebound.

    ``scope`` is ``"crypto"``, ``"us"``, ``"all"`` or one symbol. ``crypto`` and ``us`` are the
    log moves of the respective market factor (a symbol-scoped shock uses the field of its own
    market, scaled by nothing: it is that symbol's move). ``recovery`` is the fraction of the
    jump undone before the shock window of ``hours`` hours ends. Volatility is multiplied by
    ``vol_boost`` at the shock and decays back with ``half_life_hours``. When the US market is
    closed at ``at``, its part of the shock is applied at the next session's opening gap.
    ``headline`` and ``details`` seed the breaking-news item published at the shock.
    """

    at: str
    scope: str
    hours: float
    headline: str
    details: str
    crypto: float = 0.0
    us: float = 0.0
    crash_bars: int = 3
    recovery: float = 0.4
    vol_boost: float = 2.5
    half_life_hours: float = 6.0


@dataclass(frozen=True)
class ScenarioSpec:
    """A named market window: dates, seed, level multipliers and regime timelines."""

    name: str
    description: str
    seed: int
    start: str
    days: int
    crypto_level: float
    us_level: float
    crypto_legs: tuple[Leg, ...]
    us_legs: tuple[Leg, ...]
    shocks: tuple[Shock, ...] = ()


_DEFAULT = ScenarioSpec(
    name="default",
    description=(
        "Thirty days of mixed conditions across the Good Friday 2026 NYSE holiday: a crypto "
        "rally and an equity uptrend, consolidation, a sudden cross-asset sell-off during the "
        "US session, a week of deleveraging, then a tentative recovery. One single-stock shock "
        "(TSLA deliveries miss)."
    ),
    seed=20260316,
    start="2026-03-16",
    days=30,
    crypto_level=1.0,
    us_level=1.0,
    crypto_legs=(
        Leg("2026-03-16", "steady", 0.01, "Range trading in the two weeks before the window."),
        Leg(
            "2026-03-24", "uptrend", 0.09, "Risk-on rally in digital assets led by the large caps."
        ),
        Leg("2026-03-31T18:00", "steady", 0.0, "Consolidation below the recent highs.", 0.9),
        Leg("2026-04-08", "downtrend", -0.08, "Post-shock deleveraging and fund outflows.", 1.2),
        Leg("2026-04-15", "uptrend", 0.06, "Tentative recovery as selling pressure fades."),
    ),
    us_legs=(
        Leg("2026-03-16", "steady", 0.005, "Quiet trading before the window."),
        Leg("2026-03-27", "uptrend", 0.035, "Broad equity advance on firm earnings revisions."),
        Leg("2026-03-31T18:00", "steady", 0.0, "Indices pause near their highs.", 0.9),
        Leg("2026-04-09", "downtrend", -0.035, "Risk reduction after the sell-off.", 1.2),
        Leg("2026-04-15", "uptrend", 0.02, "Stocks claw back part of the decline."),
    ),
    shocks=(
        Shock(
            at="2026-03-31T18:00",
            scope="all",
            hours=4.0,
            crypto=-0.10,
            us=-0.025,
            recovery=0.45,
            headline="Sudden cross-asset sell-off: crypto drops sharply, US stocks slide",
            details=(
                "A wave of forced selling hit digital assets in the afternoon New York session "
                "after reports of a large fund unwinding leveraged positions; equity indices "
                "fell in sympathy."
            ),
        ),
        Shock(
            at="2026-04-02T11:00",
            scope="TSLA",
            hours=4.5,
            us=-0.065,
            recovery=0.2,
            headline="TSLA quarterly deliveries fall well short of estimates",
            details=(
                "The company reported vehicle deliveries for the quarter roughly a tenth below "
                "the consensus of analysts, citing softer demand in two regions."
            ),
        ),
    ),
)

_BULL = ScenarioSpec(
    name="bull",
    description=(
        "A sustained advance from November to December 2025 in both markets, interrupted by a "
        "short pause around Thanksgiving (NYSE closed on 27 November, early close on the 28th). "
        "Two upside single-name shocks: a SOL fund filing and strong NVDA results."
    ),
    seed=20251110,
    start="2025-11-10",
    days=30,
    crypto_level=0.92,
    us_level=0.97,
    crypto_legs=(
        Leg("2025-11-10", "steady", 0.01, "Sideways trading ahead of the window."),
        Leg("2025-11-19", "uptrend", 0.10, "Strong inflows into crypto funds lift prices."),
        Leg("2025-11-23", "steady", 0.0, "Brief consolidation after the first leg up.", 0.85),
        Leg("2025-12-10", "uptrend", 0.13, "The rally broadens to smaller tokens."),
    ),
    us_legs=(
        Leg("2025-11-10", "steady", 0.005, "Range-bound trading ahead of the window."),
        Leg("2025-11-20", "uptrend", 0.03, "Equities climb on strong earnings."),
        Leg("2025-11-24", "steady", 0.0, "Holiday-week pause.", 0.85),
        Leg("2025-12-10", "uptrend", 0.04, "Year-end rally led by technology names."),
    ),
    shocks=(
        Shock(
            at="2025-11-18T14:00",
            scope="SOL",
            hours=3.0,
            crypto=0.07,
            recovery=0.3,
            crash_bars=2,
            vol_boost=2.0,
            headline="Large asset manager files for a SOL-linked exchange-traded fund",
            details=(
                "A filing for a fund holding SOL directly was published this morning, the "
                "first from a manager of that size."
            ),
        ),
        Shock(
            at="2025-11-19T21:05",
            scope="NVDA",
            hours=18.5,
            us=0.065,
            recovery=0.15,
            vol_boost=2.0,
            headline="NVDA quarterly results and guidance top expectations",
            details=(
                "Data-centre revenue beat the average analyst estimate and the company guided "
                "next-quarter sales above the consensus range."
            ),
        ),
    ),
)

_BEAR = ScenarioSpec(
    name="bear",
    description=(
        "A grinding decline from late January to mid-February 2026: crypto falls in two legs "
        "separated by a weekend liquidation shock, equities weaken more slowly and steady at "
        "the end (NYSE closed on Presidents' Day, 16 February). Single-name shock: UNH cuts "
        "its outlook."
    ),
    seed=20260120,
    start="2026-01-20",
    days=30,
    crypto_level=1.06,
    us_level=1.02,
    crypto_legs=(
        Leg("2026-01-20", "steady", -0.01, "Hesitant trading before the window."),
        Leg(
            "2026-01-31T02:00",
            "downtrend",
            -0.11,
            "Steady selling as fund flows turn negative.",
            1.15,
        ),
        Leg("2026-02-12", "downtrend", -0.09, "A second leg lower after the weekend cascade.", 1.2),
        Leg("2026-02-19", "steady", 0.0, "Prices stabilise at lower levels."),
    ),
    us_legs=(
        Leg("2026-01-20", "steady", 0.0, "Flat trading before the window."),
        Leg("2026-01-26", "steady", -0.005, "Markets drift as earnings season starts."),
        Leg("2026-02-10", "downtrend", -0.05, "Growth worries weigh on equities.", 1.15),
        Leg("2026-02-19", "steady", 0.005, "Selling abates."),
    ),
    shocks=(
        Shock(
            at="2026-01-31T02:00",
            scope="crypto",
            hours=3.0,
            crypto=-0.075,
            recovery=0.3,
            headline="Weekend liquidation cascade hits crypto markets",
            details=(
                "Thin Saturday liquidity and a cluster of leveraged long positions turned a "
                "modest dip into a rapid slide across the major tokens."
            ),
        ),
        Shock(
            at="2026-01-27T11:30",
            scope="UNH",
            hours=5.0,
            us=-0.09,
            recovery=0.1,
            headline="UNH cuts its full-year outlook on higher medical costs",
            details=(
                "The insurer lowered its annual earnings forecast before the open, pointing to "
                "higher-than-planned utilisation in its largest business."
            ),
        ),
    ),
)

_CHOP = ScenarioSpec(
    name="chop",
    description=(
        "Range-bound, choppy trading over the 2025 year-end holidays: short alternating up and "
        "down legs that roughly cancel, thin holiday sessions (NYSE closed on Christmas and New "
        "Year's Day, early close on 24 December). Two short-lived single-name shocks: a DOGE "
        "spike that fades and a BA regulatory headline."
    ),
    seed=20251215,
    start="2025-12-15",
    days=30,
    crypto_level=1.0,
    us_level=1.0,
    crypto_legs=(
        Leg("2025-12-15", "steady", 0.0, "Sideways trading before the window."),
        Leg("2025-12-18", "uptrend", 0.045, "A quick bounce on short covering.", 1.1),
        Leg("2025-12-22", "downtrend", -0.05, "The bounce fades as sellers return.", 1.1),
        Leg("2025-12-25", "uptrend", 0.04, "Pre-holiday buying.", 1.1),
        Leg("2025-12-29", "steady", 0.0, "Holiday lull with thin volumes.", 0.8),
        Leg("2026-01-01", "downtrend", -0.045, "Year-end position squaring.", 1.1),
        Leg("2026-01-05", "uptrend", 0.05, "New-year inflows lift prices.", 1.1),
        Leg("2026-01-09", "downtrend", -0.04, "Gains given back again.", 1.1),
        Leg("2026-01-14", "steady", 0.005, "Back to the middle of the range."),
    ),
    us_legs=(
        Leg("2025-12-15", "steady", 0.0, "Flat trading before the window."),
        Leg("2025-12-19", "uptrend", 0.015, "Mild gains into options expiry."),
        Leg("2025-12-24", "downtrend", -0.015, "Mild losses as the holidays approach."),
        Leg("2026-01-02", "steady", 0.0, "Holiday sessions with thin volume.", 0.8),
        Leg("2026-01-08", "uptrend", 0.015, "A new-year bounce."),
        Leg("2026-01-14", "downtrend", -0.015, "The bounce reverses."),
    ),
    shocks=(
        Shock(
            at="2026-01-06T16:00",
            scope="DOGE",
            hours=2.0,
            crypto=0.09,
            recovery=0.6,
            crash_bars=2,
            vol_boost=2.0,
            headline="DOGE jumps after a payments app adds it to its checkout options",
            details=(
                "A mid-sized payments app said it will accept DOGE at checkout, setting off a "
                "burst of buying on spot and derivatives venues."
            ),
        ),
        Shock(
            at="2026-01-08T15:45",
            scope="BA",
            hours=2.0,
            us=-0.055,
            recovery=0.25,
            headline="Aviation regulator opens a review of a BA production line",
            details=(
                "The regulator said it is examining quality records at one final-assembly "
                "line; the company said deliveries continue."
            ),
        ),
    ),
)

_FLASH = ScenarioSpec(
    name="flash-crash",
    description=(
        "Calm, then a steady climb in May 2026, broken by a flash crash on 20 May: crypto "
        "falls by more than a tenth within one hour during the US session and recovers about "
        "half of it within six hours, while US equities drop in tandem and recover less. "
        "Afterwards crypto drifts lower and equities stabilise (NYSE closed on Memorial Day, "
        "25 May)."
    ),
    seed=20260504,
    start="2026-05-04",
    days=30,
    crypto_level=1.02,
    us_level=1.02,
    crypto_legs=(
        Leg("2026-05-04", "steady", 0.01, "Quiet trading before the window."),
        Leg("2026-05-11", "steady", 0.0, "Range trading with low volatility.", 0.8),
        Leg("2026-05-20T14:00", "uptrend", 0.07, "A steady climb with rising leverage."),
        Leg("2026-05-27", "downtrend", -0.04, "Choppy drift lower after the crash.", 1.3),
        Leg("2026-06-03", "steady", 0.01, "Volatility settles."),
    ),
    us_legs=(
        Leg("2026-05-04", "steady", 0.0, "Flat trading before the window."),
        Leg("2026-05-20T14:00", "uptrend", 0.025, "Gradual gains on firm data."),
        Leg("2026-05-27", "steady", -0.005, "Equities stabilise after the drop.", 1.2),
        Leg("2026-06-03", "uptrend", 0.015, "A slow recovery."),
    ),
    shocks=(
        Shock(
            at="2026-05-20T14:00",
            scope="all",
            hours=6.0,
            crypto=-0.14,
            us=-0.035,
            crash_bars=4,
            recovery=0.5,
            vol_boost=3.0,
            half_life_hours=8.0,
            headline="Flash crash: crypto plunges within minutes, US stocks tumble",
            details=(
                "A cascade of liquidations on perpetual futures venues pushed the major tokens "
                "down in minutes; a large market maker briefly pulled its quotes and US "
                "equities sold off alongside."
            ),
        ),
    ),
)

SPECS: dict[str, ScenarioSpec] = {s.name: s for s in (_DEFAULT, _BULL, _BEAR, _CHOP, _FLASH)}
"""The shipped scenarios, keyed by name, in their canonical order."""
