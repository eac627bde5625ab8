"""Synthetic, time-stamped news corpus of a scenario (for the point-in-time search tool).

Every item is invented and says so in its body. Items come in five kinds:

* **daily wraps** - a crypto wrap shortly after each UTC midnight and a US wrap shortly after
  each NYSE close, quoting figures computed from the scenario's own bars;
* **calendar notices** - NYSE holidays and early closes, announced after the previous session;
* **regime stories** - published a few hours into each regime segment (conditions, no price
  claims) and, for longer segments, a mid-segment update quoting the realised move so far;
* **shock coverage** - a breaking item at (never before) the shock, then follow-ups with the
  measured drop and rebound;
* **routine items** - neutral company, crypto-network and macro-calendar notes that fill each
  day to a few items and never mention prices.

Figures quoted by an item only use bars that closed at or before its publication time.
"""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from benchmark.market.clock import as_utc
from benchmark.market.universe import DEFAULT_UNIVERSE, Market

from . import NewsItem, NewsMarket
from .specs import Shock
from .timeline import BAR, Segment, Timeline, nyse_calendar, nyse_holidays, nyse_sessions

DISCLAIMER = (
    "[Simulated report - synthetic news written for the livemace offline market; the events, "
    "quotes and figures are invented and refer to simulated prices.]"
)

OUTLETS: dict[NewsMarket, tuple[str, ...]] = {
    "crypto": ("Coinfield Dispatch", "Ledgerline Daily"),
    "us": ("Quarry Street Report", "Tidewater Market Wire"),
    "macro": ("Northgate Macro Desk", "Tidewater Market Wire"),
}

NEW_YORK = ZoneInfo("America/New_York")
MIN_ITEMS_PER_DAY = 3
"""Routine items top every UTC day up to at least this many items."""
MAX_ITEMS_PER_DAY = 9
"""Routine items never push a day beyond this many items (shock days may exceed it)."""
ROUTINE_MEAN = 2.5
"""Mean number of routine items drawn per day before the bounds above are applied."""


@dataclass(frozen=True)
class _Draft:
    """A news item before it gets its id."""

    published_at: pd.Timestamp
    headline: str
    text: str
    symbols: tuple[str, ...]
    market: NewsMarket
    outlet: str


def _ns(ts: pd.Timestamp) -> int:
    return int(ts.as_unit("ns").value)


class _Prices:
    """Point-in-time price look-ups on a scenario's bars."""

    def __init__(self, bars: pd.DataFrame) -> None:
        self._by_symbol = {
            str(s): (
                pd.DatetimeIndex(g["ts"]).as_unit("ns").asi8,
                g["open"].to_numpy(),
                g["low"].to_numpy(),
                g["high"].to_numpy(),
                g["close"].to_numpy(),
            )
            for s, g in bars.groupby("symbol", sort=False)
        }

    def close_at(self, symbol: str, when: pd.Timestamp) -> float:
        """Close of the last bar that closed by ``when`` (the first open if none has)."""
        ts, opens, _, _, closes = self._by_symbol[symbol]
        i = int(np.searchsorted(ts, _ns(as_utc(when) - BAR), side="right"))
        return float(closes[i - 1]) if i > 0 else float(opens[0])

    def change(self, symbol: str, start: pd.Timestamp, end: pd.Timestamp) -> float:
        """Simple return from ``close_at(start)`` to ``close_at(end)``."""
        return self.close_at(symbol, end) / self.close_at(symbol, start) - 1.0

    def first_bar_at_or_after(self, symbol: str, when: pd.Timestamp) -> pd.Timestamp | None:
        """Open time of the first bar of ``symbol`` at or after ``when``."""
        ts = self._by_symbol[symbol][0]
        i = int(np.searchsorted(ts, _ns(as_utc(when)), side="left"))
        return pd.Timestamp(int(ts[i]), tz="UTC") if i < len(ts) else None

    def range_between(
        self, symbol: str, start: pd.Timestamp, end: pd.Timestamp
    ) -> tuple[float, float]:
        """Lowest low and highest high of the bars in ``[start, end)`` closed by ``end``."""
        ts, _, lows, highs, _ = self._by_symbol[symbol]
        lo = int(np.searchsorted(ts, _ns(as_utc(start)), side="left"))
        hi = int(np.searchsorted(ts, _ns(as_utc(end) - BAR), side="right"))
        if hi <= lo:
            price = self.close_at(symbol, end)
            return price, price
        return float(lows[lo:hi].min()), float(highs[lo:hi].max())


def _price(value: float) -> str:
    if value >= 1000:
        return f"${value:,.0f}"
    if value >= 10:
        return f"${value:,.2f}"
    if value >= 1:
        return f"${value:.3f}"
    return f"${value:.4f}"


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%"


def _day(ts: pd.Timestamp) -> str:
    return as_utc(ts).strftime("%A %d %B %Y")


def _minutes(rng: np.random.Generator, low: int, high: int) -> pd.Timedelta:
    return pd.Timedelta(minutes=int(rng.integers(low, high + 1)))


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _outlet(rng: np.random.Generator, market: NewsMarket) -> str:
    return _pick(rng, OUTLETS[market])


def _verb(change: float, small: float) -> str:
    if change >= 4 * small:
        return "jumps"
    if change >= small:
        return "rises"
    if change <= -4 * small:
        return "tumbles"
    if change <= -small:
        return "slips"
    return "is little changed"


# --- daily wraps ----------------------------------------------------------------------------


def _crypto_wraps(timeline: Timeline, prices: _Prices, rng: np.random.Generator) -> list[_Draft]:
    window = timeline.window
    drafts = []
    for day in pd.date_range(window.history_start, window.end, freq="D", inclusive="left"):
        publish = day + pd.Timedelta(days=1) + _minutes(rng, 4, 25)
        if publish >= window.end:
            continue
        close = day + pd.Timedelta(days=1)
        moves = {s: prices.change(s, day, close) for s in DEFAULT_UNIVERSE.crypto}
        btc = prices.close_at("BTC", close)
        low, high = prices.range_between("BTC", day, close)
        best = max(moves, key=lambda s: moves[s])
        worst = min(moves, key=lambda s: moves[s])
        verb = _verb(moves["BTC"], 0.006)
        move_text = "" if verb == "is little changed" else f" {abs(moves['BTC']) * 100:.1f}%"
        headline = f"Bitcoin {verb}{move_text} on the day, ends near {_price(btc)}"
        listing = ", ".join(
            f"{s} {_price(prices.close_at(s, close))} ({_pct(moves[s])})"
            for s in DEFAULT_UNIVERSE.crypto
        )
        text = (
            f"Crypto wrap for {_day(day)} (UTC). Closing levels: {listing}. Best performer: "
            f"{best} ({_pct(moves[best])}); weakest: {worst} ({_pct(moves[worst])}). Bitcoin "
            f"traded between {_price(low)} and {_price(high)} during the day."
        )
        drafts.append(
            _Draft(
                publish, headline, text, DEFAULT_UNIVERSE.crypto, "crypto", _outlet(rng, "crypto")
            )
        )
    return drafts


def _us_wraps(timeline: Timeline, prices: _Prices, rng: np.random.Generator) -> list[_Draft]:
    window = timeline.window
    sessions = nyse_sessions(window.history_start, window.end)
    early = set(nyse_calendar(window.history_start, window.end).early_closes)
    drafts = []
    previous: pd.Timestamp | None = None
    for row in sessions.itertuples(index=False):
        opened, closed = as_utc(row.open), as_utc(row.close)
        publish = closed + _minutes(rng, 6, 22)
        reference = opened if previous is None else previous
        previous = closed
        if publish >= window.end:
            continue
        moves = {s: prices.change(s, reference, closed) for s in DEFAULT_UNIVERSE.us}
        basket = float(np.mean(list(moves.values())))
        up = sum(1 for m in moves.values() if m > 0)
        ranked = sorted(moves, key=lambda s: moves[s])
        leaders = ", ".join(f"{s} {_pct(moves[s])}" for s in reversed(ranked[-3:]))
        laggards = ", ".join(f"{s} {_pct(moves[s])}" for s in ranked[:3])
        if abs(basket) < 0.002:
            headline = f"US large caps end mixed; {ranked[-1]} leads, {ranked[0]} lags"
        elif basket > 0:
            headline = f"US stocks close higher, tracked basket {_pct(basket)}; {ranked[-1]} leads"
        else:
            headline = f"US stocks close lower, tracked basket {_pct(basket)}; {ranked[0]} lags"
        short = (
            " The session was shortened by an early close."
            if closed.tz_localize(None).normalize() in early
            else ""
        )
        text = (
            f"US close for {_day(closed)}. The equal-weight basket of the {len(moves)} tracked "
            f"large caps moved {_pct(basket)} ({up} advancers, {len(moves) - up} decliners). "
            f"Leaders: {leaders}. Laggards: {laggards}.{short}"
        )
        drafts.append(
            _Draft(publish, headline, text, DEFAULT_UNIVERSE.us, "us", _outlet(rng, "us"))
        )
    return drafts


def _calendar_notices(timeline: Timeline, rng: np.random.Generator) -> list[_Draft]:
    window = timeline.window
    sessions = nyse_sessions(window.history_start, window.end)
    closes = [as_utc(c) for c in sessions["close"]]
    calendar = nyse_calendar(window.history_start, window.end)
    notices: list[tuple[pd.Timestamp, str, str]] = []
    for day, name in nyse_holidays(window.history_start, window.end).items():
        notices.append(
            (
                as_utc(day),
                f"US stock markets closed on {_day(day)} for {name}",
                (
                    f"The NYSE and other US equity venues will not open on {_day(day)} ({name}). "
                    "Crypto venues trade as usual."
                ),
            )
        )
    for day in calendar.early_closes:
        when = as_utc(day)
        if window.history_start <= when < window.end:
            notices.append(
                (
                    when,
                    f"NYSE to close early on {_day(when)}",
                    (
                        f"Regular trading on {_day(when)} ends at 1 p.m. New York time, three "
                        "hours before the usual close."
                    ),
                )
            )
    drafts = []
    for day, headline, text in notices:
        before = [c for c in closes if c < day]
        if not before:
            continue
        publish = before[-1] + _minutes(rng, 30, 55)
        if publish < window.end:
            drafts.append(_Draft(publish, headline, text, (), "macro", _outlet(rng, "macro")))
    return drafts


# --- regime stories -------------------------------------------------------------------------

_REGIME_OPENERS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("crypto", "uptrend"): (
        (
            "Inflows into crypto investment products pick up",
            (
                "Weekly flow data compiled by fund administrators show net subscriptions into "
                "exchange-traded crypto products for the first time in several weeks, and desks "
                "report more demand for upside options."
            ),
        ),
        (
            "Crypto desks report renewed appetite from institutional clients",
            (
                "Several trading desks describe a pick-up in requests from asset managers and "
                "corporate treasuries, with spot buying outweighing derivatives activity."
            ),
        ),
    ),
    ("crypto", "downtrend"): (
        (
            "Crypto funds see redemptions as risk appetite cools",
            (
                "Flow trackers show money leaving exchange-traded crypto products, and funding "
                "rates on perpetual futures have slipped below neutral on several venues."
            ),
        ),
        (
            "Traders turn defensive on digital assets",
            (
                "Options desks report heavier demand for downside protection on the largest tokens "
                "while open interest in leveraged longs is being reduced."
            ),
        ),
    ),
    ("crypto", "steady"): (
        (
            "Crypto markets settle into a range",
            (
                "Implied volatility on the main tokens has eased and order books show balanced "
                "interest on both sides, according to market makers."
            ),
        ),
        (
            "Quiet spell for digital assets as volumes thin",
            (
                "With few scheduled catalysts, traders describe a wait-and-see mood and tighter "
                "day-to-day ranges."
            ),
        ),
    ),
    ("us", "uptrend"): (
        (
            "Strategists lift year-end targets as earnings revisions improve",
            (
                "More analysts are raising profit estimates than cutting them, and several brokers "
                "nudged up their index targets this week."
            ),
        ),
        (
            "Equity fund inflows strengthen, led by large-cap growth",
            (
                "Weekly fund data show fresh money moving into US equity funds, with the largest "
                "share going to large-cap growth strategies."
            ),
        ),
    ),
    ("us", "downtrend"): (
        (
            "Investors trim equity exposure amid growth worries",
            (
                "Positioning surveys show portfolio managers reducing stock allocations and adding "
                "to cash as concern about the growth outlook rises."
            ),
        ),
        (
            "Defensive rotation under way on Wall Street",
            (
                "Traders describe money moving from cyclical and technology names toward staples, "
                "health care and utilities."
            ),
        ),
    ),
    ("us", "steady"): (
        (
            "Wall Street in wait-and-see mode",
            (
                "With earnings season quiet and few data releases, strategists expect indices to "
                "trade sideways until a clearer catalyst appears."
            ),
        ),
        (
            "Low-volatility stretch for US equities",
            (
                "Implied volatility on the large-cap index has drifted lower and daily ranges have "
                "narrowed, desks report."
            ),
        ),
    ),
}


def _regime_items(timeline: Timeline, prices: _Prices, rng: np.random.Generator) -> list[_Draft]:
    drafts = []
    end = timeline.window.end
    for market in ("crypto", "us"):
        for seg in timeline.market(market):
            if seg.regime == "shock":
                continue
            publish = seg.start + _minutes(rng, 90, 360)
            if publish < min(seg.end, end):
                options = _REGIME_OPENERS[(market, seg.regime)]
                headline, text = options[int(rng.integers(len(options)))]
                symbols = DEFAULT_UNIVERSE.crypto if market == "crypto" else DEFAULT_UNIVERSE.us
                drafts.append(
                    _Draft(publish, headline, text, symbols, market, _outlet(rng, market))
                )
            if seg.hours >= 60:
                drafts.append(_progress_item(seg, market, prices, rng))
    return [d for d in drafts if d.published_at < end]


def _progress_item(seg: Segment, market: str, prices: _Prices, rng: np.random.Generator) -> _Draft:
    """A mid-segment update quoting the realised move since the segment began."""
    publish = seg.start + (seg.end - seg.start) * 0.55
    publish = publish.floor("min") + _minutes(rng, 0, 40)
    since = _day(seg.start)
    if market == "crypto":
        move = prices.change("BTC", seg.start, publish)
        alt = float(
            np.mean([prices.change(s, seg.start, publish) for s in DEFAULT_UNIVERSE.crypto])
        )
        verb = _verb(move, 0.01)
        headline = (
            f"Bitcoin {verb} since {seg.start:%d %B}"
            if verb == "is little changed"
            else f"Bitcoin {verb} {abs(move) * 100:.1f}% since {seg.start:%d %B}"
        )
        text = (
            f"Since {since}, BTC has moved {_pct(move)} to "
            f"{_price(prices.close_at('BTC', publish))}, "
            f"while an equal-weight basket of the six largest tokens moved {_pct(alt)}."
        )
        return _Draft(
            publish, headline, text, DEFAULT_UNIVERSE.crypto, "crypto", _outlet(rng, "crypto")
        )
    moves = {s: prices.change(s, seg.start, publish) for s in DEFAULT_UNIVERSE.us}
    basket = float(np.mean(list(moves.values())))
    best = max(moves, key=lambda s: moves[s])
    worst = min(moves, key=lambda s: moves[s])
    trend = "higher" if basket > 0.004 else "lower" if basket < -0.004 else "flat"
    headline = f"US large caps {trend} since {seg.start:%d %B}, basket {_pct(basket)}"
    text = (
        f"Since {since}, the equal-weight basket of tracked US large caps has moved "
        f"{_pct(basket)}. Strongest: {best} ({_pct(moves[best])}); weakest: {worst} "
        f"({_pct(moves[worst])})."
    )
    return _Draft(publish, headline, text, DEFAULT_UNIVERSE.us, "us", _outlet(rng, "us"))


# --- shocks ---------------------------------------------------------------------------------


def _market_symbols(market: Market) -> tuple[str, ...]:
    return DEFAULT_UNIVERSE.crypto if market == "crypto" else DEFAULT_UNIVERSE.us


def _shock_market(shock: Shock) -> NewsMarket:
    if shock.scope in ("crypto", "us"):
        return "crypto" if shock.scope == "crypto" else "us"
    if shock.scope == "all":
        return "macro"
    return DEFAULT_UNIVERSE.market_of(shock.scope)


def _shock_symbols(shock: Shock) -> tuple[str, ...]:
    if shock.scope == "crypto":
        return DEFAULT_UNIVERSE.crypto
    if shock.scope == "us":
        return DEFAULT_UNIVERSE.us
    if shock.scope == "all":
        return DEFAULT_UNIVERSE.symbols
    return (shock.scope,)


def _shock_parts(shock: Shock) -> tuple[Market, ...]:
    """Markets whose prices a shock moves."""
    if shock.scope == "all":
        return ("crypto", "us")
    if shock.scope in ("crypto", "us"):
        return ("crypto",) if shock.scope == "crypto" else ("us",)
    return (DEFAULT_UNIVERSE.market_of(shock.scope),)


@dataclass(frozen=True)
class _Subject:
    """What a shock follow-up measures: one symbol, or an equal-weight basket."""

    name: str
    phrase: str
    symbols: tuple[str, ...]
    quote: str | None

    @classmethod
    def of(cls, shock: Shock, market: Market) -> _Subject:
        if shock.scope in DEFAULT_UNIVERSE:
            return cls(shock.scope, shock.scope, (shock.scope,), shock.scope)
        if market == "crypto":
            return cls("Bitcoin", "Bitcoin", DEFAULT_UNIVERSE.crypto, "BTC")
        return cls("The tracked US basket", "the tracked US basket", DEFAULT_UNIVERSE.us, None)

    def move(self, prices: _Prices, start: pd.Timestamp, end: pd.Timestamp) -> float:
        if self.quote is not None:
            return prices.change(self.quote, start, end)
        return float(np.mean([prices.change(s, start, end) for s in self.symbols]))


def _shock_items(timeline: Timeline, prices: _Prices, rng: np.random.Generator) -> list[_Draft]:
    drafts = []
    for shock in timeline.shocks:
        at = as_utc(shock.at)
        market = _shock_market(shock)
        body = shock.details
        if shock.scope in ("crypto", "all"):
            body += " Prices were moving sharply as this report was filed."
        drafts.append(
            _Draft(
                at + _minutes(rng, 0, 4),
                shock.headline,
                body,
                _shock_symbols(shock),
                market,
                _outlet(rng, market),
            )
        )
        for part in _shock_parts(shock):
            first_bar = prices.first_bar_at_or_after(_market_symbols(part)[0], at)
            if first_bar is None:
                continue
            reaction = first_bar + BAR * shock.crash_bars
            settle = max(at + pd.Timedelta(hours=shock.hours), reaction + pd.Timedelta(hours=2))
            drafts.extend(_shock_followups(shock, part, reaction, settle, prices, rng))
    return [d for d in drafts if d.published_at < timeline.window.end]


def _shock_followups(
    shock: Shock,
    market: Market,
    reaction: pd.Timestamp,
    settle: pd.Timestamp,
    prices: _Prices,
    rng: np.random.Generator,
) -> list[_Draft]:
    """Measured coverage once the jump has played out and again after the shock window."""
    at = as_utc(shock.at)
    subject = _Subject.of(shock, market)
    first = reaction + _minutes(rng, 8, 20)
    later = settle + _minutes(rng, 5, 20)
    early_move = subject.move(prices, at, first)
    late_move = subject.move(prices, at, later)
    direction = "down" if early_move < 0 else "up"
    headline = f"{subject.name} {direction} {abs(early_move) * 100:.1f}% after the news"
    text = (
        f"Measured from the last price before the event, {subject.phrase} is {direction} "
        f"{abs(early_move) * 100:.1f}%."
    )
    if subject.quote is not None:
        low, high = prices.range_between(subject.quote, at, first)
        text += (
            f" {subject.quote} touched {_price(low if early_move < 0 else high)} at the extreme."
        )
    coverage = [(first, headline, text)]
    verb = "pares" if abs(late_move) < abs(early_move) else "extends"
    headline = f"{subject.name} {verb} the move, {_pct(late_move)} since the event"
    text = (
        f"Hours after the event, {subject.phrase} stands "
        f"{_pct(late_move)} from its pre-event level, against {_pct(early_move)} shortly after it."
    )
    if subject.quote is not None:
        text += (
            f" {subject.quote} last traded at {_price(prices.close_at(subject.quote, later))}; "
            "dealers describe two-way flows returning."
        )
    coverage.append((later, headline, text))
    news_market: NewsMarket = "crypto" if market == "crypto" else "us"
    return [
        _Draft(when, head, body, subject.symbols, news_market, _outlet(rng, news_market))
        for when, head, body in coverage
    ]


# --- routine items --------------------------------------------------------------------------

_CRYPTO_ROUTINE: tuple[tuple[str, str], ...] = (
    (
        "{sym} core developers publish a test-network timetable for the next upgrade",
        (
            "The release notes list performance fixes and a schedule of test-network milestones; "
            "no change to the main network is planned this month."
        ),
    ),
    (
        "Mid-sized exchange adds new {sym} trading pairs",
        "The venue said the pairs will open in stages and come with standard position limits.",
    ),
    (
        "On-chain activity on {sym} little changed over the week",
        (
            "Active addresses and transaction counts stayed within their recent ranges, according "
            "to a blockchain analytics provider."
        ),
    ),
    (
        "Custody provider extends {sym} support to more institutional clients",
        "The firm said the service covers segregated storage and reporting for audited funds.",
    ),
    (
        "Stablecoin supply edges up across major networks",
        (
            "The combined circulating supply of the largest dollar-pegged tokens rose slightly "
            "over the past seven days."
        ),
    ),
    (
        "Funding rates on {sym} perpetual futures hover near neutral",
        (
            "Data from several derivatives venues show neither longs nor shorts paying a notable "
            "premium to hold positions."
        ),
    ),
    (
        "Wallet provider ships security update for {sym} users",
        "The update tightens transaction signing prompts; the company said no funds were affected.",
    ),
)

_US_ROUTINE: tuple[tuple[str, str], ...] = (
    (
        "{sym} declares its regular quarterly dividend",
        "The board approved the usual payout, in line with the previous quarter.",
    ),
    (
        "{sym} to present at an industry conference next week",
        (
            "Senior managers are scheduled to speak at a sector conference; the company did not "
            "indicate any update to its outlook."
        ),
    ),
    (
        "Broker reiterates neutral view on {sym}",
        (
            "A regional brokerage kept its rating and price target unchanged after a meeting with "
            "management."
        ),
    ),
    (
        "{sym} names a new head of operations for one division",
        "The appointment was described as part of a planned succession.",
    ),
    (
        "{sym} files routine materials ahead of its annual meeting",
        "The filing covers board nominations and standard shareholder proposals.",
    ),
    (
        "{sym} expands a supplier partnership programme",
        "The company said the programme aims to shorten lead times; terms were not disclosed.",
    ),
    (
        "Options activity in {sym} near its monthly average",
        "Call and put volumes were broadly balanced, according to exchange data.",
    ),
)

_MACRO_ROUTINE: tuple[tuple[int, str, str], ...] = (
    (
        8,
        "Weekly jobless claims roughly in line with forecasts",
        "Initial claims for unemployment benefits came in close to the consensus of economists.",
    ),
    (
        10,
        "Regional manufacturing survey shows little change",
        "The headline index of a regional factory survey was near zero, with new orders flat.",
    ),
    (
        13,
        "Treasury auction draws average demand",
        "Bid-to-cover ratios at today's note auction were close to recent averages.",
    ),
    (
        10,
        "Consumer sentiment gauge steady",
        "A preliminary survey of households showed confidence broadly unchanged from last month.",
    ),
    (
        14,
        "Central bank official says policy is well positioned",
        (
            "A regional central bank president said current settings are appropriate and that the "
            "committee will keep watching incoming data."
        ),
    ),
    (
        11,
        "Oil prices drift in a narrow range",
        "Crude futures moved less than one per cent as traders awaited inventory figures.",
    ),
    (
        9,
        "Dollar index little changed in quiet currency trading",
        "Major currency pairs held inside recent ranges ahead of next week's data.",
    ),
)


def _routine(
    day: pd.Timestamp, rng: np.random.Generator, window_end: pd.Timestamp
) -> _Draft | None:
    """One neutral filler item on ``day`` (crypto only at weekends)."""
    weekday = day.day_of_week < 5
    roll = rng.random()
    if not weekday or roll < 0.4:
        symbol = _pick(rng, DEFAULT_UNIVERSE.crypto)
        headline, text = _CRYPTO_ROUTINE[int(rng.integers(len(_CRYPTO_ROUTINE)))]
        publish = day + _minutes(rng, 30, 23 * 60 + 29)
        market: NewsMarket = "crypto"
        symbols: tuple[str, ...] = (symbol,) if "{sym}" in headline else ()
    elif roll < 0.78:
        symbol = _pick(rng, DEFAULT_UNIVERSE.us)
        headline, text = _US_ROUTINE[int(rng.integers(len(_US_ROUTINE)))]
        publish = day + pd.Timedelta(hours=11) + _minutes(rng, 0, 10 * 60)
        market, symbols = "us", (symbol,)
    else:
        hour, headline, text = _MACRO_ROUTINE[int(rng.integers(len(_MACRO_ROUTINE)))]
        local = pd.Timestamp(
            day.year, day.month, day.day, hour, 30 if hour == 8 else 0, tz=NEW_YORK
        )
        publish = as_utc(local) + _minutes(rng, 0, 3)
        market, symbols, symbol = "macro", (), ""
    if publish >= window_end:
        return None
    return _Draft(publish, headline.format(sym=symbol), text, symbols, market, _outlet(rng, market))


def _fill_days(drafts: list[_Draft], timeline: Timeline, rng: np.random.Generator) -> list[_Draft]:
    """Add routine items so every day has a few items and busy days are not flooded."""
    window = timeline.window
    counts: dict[pd.Timestamp, int] = {}
    for d in drafts:
        key = d.published_at.normalize()
        counts[key] = counts.get(key, 0) + 1
    fillers: list[_Draft] = []
    for day in pd.date_range(window.history_start, window.end, freq="D", inclusive="left"):
        have = counts.get(day, 0)
        wanted = max(int(rng.poisson(ROUTINE_MEAN)), MIN_ITEMS_PER_DAY - have)
        wanted = max(min(wanted, MAX_ITEMS_PER_DAY - have), 0)
        placed = 0
        while placed < wanted:
            item = _routine(day, rng, window.end)
            if item is None:
                break
            fillers.append(item)
            placed += 1
    return drafts + fillers


def build_news(
    name: str, timeline: Timeline, bars: pd.DataFrame, rng: np.random.Generator
) -> tuple[NewsItem, ...]:
    """The full news corpus of a scenario, sorted by publication time."""
    prices = _Prices(bars)
    drafts = (
        _crypto_wraps(timeline, prices, rng)
        + _us_wraps(timeline, prices, rng)
        + _calendar_notices(timeline, rng)
        + _regime_items(timeline, prices, rng)
        + _shock_items(timeline, prices, rng)
    )
    drafts = _fill_days(drafts, timeline, rng)
    window = timeline.window
    kept = [d for d in drafts if window.history_start <= d.published_at < window.end]
    kept.sort(key=lambda d: (d.published_at, d.market, d.headline))
    return tuple(
        NewsItem(
            id=f"{name}-{i:04d}",
            published_at=d.published_at,
            headline=d.headline,
            body=f"{DISCLAIMER} {d.text}",
            symbols=d.symbols,
            market=d.market,
            source=f"synthetic:{d.outlet}",
        )
        for i, d in enumerate(kept, start=1)
    )
