"""The tradable universe: which symbols exist and which market each belongs to.

Two markets share one account: ``crypto`` (24/7, long and short, leverage 1-10) and ``us``
(NYSE regular session only, long only, leverage 1). The default universe is the one the
LiveMACE platform trades; any other list of symbols can be used as long as each is tagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Market = Literal["crypto", "us"]
MARKETS: tuple[Market, ...] = ("crypto", "us")

DEFAULT_CRYPTO: tuple[str, ...] = ("BTC", "ETH", "SOL", "BNB", "XRP", "DOGE")
DEFAULT_US: tuple[str, ...] = (
    "AAPL", "NVDA", "GOOGL", "META", "AMZN", "TSLA", "PG", "JNJ", "UNH",
    "JPM", "V", "BA", "XOM", "NEE", "AMT", "PLD", "LIN",
)


@dataclass(frozen=True)
class Universe:
    """An immutable mapping from symbol to market."""

    crypto: tuple[str, ...] = DEFAULT_CRYPTO
    us: tuple[str, ...] = DEFAULT_US

    def __post_init__(self) -> None:
        overlap = set(self.crypto) & set(self.us)
        if overlap:
            raise ValueError(f"symbols listed in both markets: {sorted(overlap)}")

    @property
    def symbols(self) -> tuple[str, ...]:
        return self.crypto + self.us

    def market_of(self, symbol: str) -> Market:
        if symbol in self.crypto:
            return "crypto"
        if symbol in self.us:
            return "us"
        raise KeyError(symbol)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self.crypto or symbol in self.us


DEFAULT_UNIVERSE = Universe()
