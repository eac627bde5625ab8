"""Lexical ranking of the search sub-agent's news items."""

import pandas as pd

from benchmark.harness.tools.search import rank_news
from benchmark.market.data import NewsItem

T = pd.Timestamp("2026-03-16", tz="UTC")


def item(i, headline, symbols=(), minutes=0):
    return NewsItem(f"n{i}", T + pd.Timedelta(minutes=minutes), headline, "", tuple(symbols), "crypto")


def test_aliases_overlap_and_recency_order():
    items = [
        item(0, "Bitcoin miners sell reserves", ("BTC",), 0),
        item(1, "Apple supplier warns on margins", ("AAPL",), 10),
        item(2, "BTC funding turns negative as bitcoin slides", ("BTC",), 20),
        item(3, "Quiet session for Asian equities", (), 30),
    ]
    ranked = rank_news(items, "What is the latest news about bitcoin funding?", k=3)
    # n2 shares 'btc' and 'funding'; n0 only 'btc'; nothing else overlaps
    assert [i.id for i in ranked] == ["n2", "n0"]


def test_no_overlap_returns_the_newest_items():
    items = [item(i, f"headline {i}", minutes=i) for i in range(5)]
    assert [i.id for i in rank_news(items, "zebra", k=2)] == ["n4", "n3"]
