"""Simulator throughput over the 30-day `default` scenario with all 23 symbols.

Prints:
* decision rounds per second — a round = advance the clock 4 h (marking every 15-min bar on the
  way), build the strategy observation (23 snapshots + account) and submit the grid's orders;
* checkpoint updates per second — marking the account and updating the four checkpoint series
  at every 15-minute bar, with open positions in all symbols;
* point-in-time reads per second — price, snapshot and 100-bar 1 h klines.

    python perf/simulator_throughput.py [--scenario default] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from benchmark.baselines.runner import observe
from benchmark.baselines.strategies import BuyAndHold, make_strategy
from benchmark.market.engine import MarketSimulator
from benchmark.market.orders import OrderRejected
from benchmark.market.window import resolve_window


def rounds_per_second(scenario: str) -> tuple[int, float]:
    window = resolve_window(scenario)
    sim = MarketSimulator(window.source, window.grid.start)
    strategy = make_strategy("grid")
    times = window.grid.times()
    start = time.perf_counter()
    for when in times:
        sim.advance_to(when)
        for order in strategy.decide(observe(sim)):
            try:
                sim.execute(order)
            except OrderRejected:
                pass
    return len(times), time.perf_counter() - start


def checkpoint_updates_per_second(scenario: str) -> tuple[int, float]:
    window = resolve_window(scenario)
    first_us_open = next(
        t for t in window.grid.times() if t.hour in (16, 20)
    )
    sim = MarketSimulator(window.source, first_us_open)
    for order in BuyAndHold().decide(observe(sim)):
        try:
            sim.execute(order)
        except OrderRejected:
            pass
    step = window.source.bar_interval
    ticks = int((window.grid.end - first_us_open) / step)
    start = time.perf_counter()
    sim.advance_to(first_us_open + ticks * step)
    return ticks, time.perf_counter() - start


def reads_per_second(scenario: str, n: int = 2000) -> tuple[int, float]:
    window = resolve_window(scenario)
    sim = MarketSimulator(window.source, window.grid.start + pd.Timedelta(days=15))
    symbols = list(window.source.universe.symbols)
    start = time.perf_counter()
    for i in range(n):
        symbol = symbols[i % len(symbols)]
        sim.data.price(symbol)
        sim.data.snapshot(symbol)
        sim.data.bars(symbol, "1h", limit=100)
    return n, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"scenario {args.scenario}, best of {args.repeat}")
    for label, fn, unit in (
        ("decision rounds (grid strategy)", rounds_per_second, "rounds/s"),
        ("checkpoint updates (15-min marks, 23 positions)", checkpoint_updates_per_second, "updates/s"),
        ("point-in-time reads (price+snapshot+klines)", reads_per_second, "reads/s"),
    ):
        best = min((fn(args.scenario) for _ in range(args.repeat)), key=lambda r: r[1] / r[0])
        count, seconds = best
        print(f"{label:<50} {count:>6} in {seconds:7.3f} s  → {count / seconds:>10,.0f} {unit}")


if __name__ == "__main__":
    main()
