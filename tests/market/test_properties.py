"""Hypothesis property tests of simulator invariants."""

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark.market.checkpoints import CHECKPOINT_INTERVALS
from benchmark.market.orders import OrderRejected, OrderRequest
from policies import load_r0
from tests.market.factories import MONDAY, simulator

LIMITS = load_r0()

prices = st.lists(st.floats(min_value=50.0, max_value=150.0, allow_nan=False), min_size=40, max_size=40)

orders = st.lists(
    st.tuples(
        st.sampled_from(["open", "open", "all_in", "close", "close_all", "hold"]),
        st.sampled_from(["BTC", "ETH", "AAPL"]),
        st.sampled_from(["long", "short"]),
        st.one_of(
            st.tuples(st.just("portion"), st.floats(min_value=0.001, max_value=1.0)),
            st.tuples(st.just("usd"), st.floats(min_value=1.0, max_value=5_000.0)),
        ),
        st.floats(min_value=0.05, max_value=1.0),
        st.sampled_from([1.0, 2.0, 5.0, 8.0]),
        st.integers(min_value=0, max_value=3),  # bars to advance after the order
    ),
    min_size=1,
    max_size=25,
)


def _request(op, symbol, direction, sizing, ratio, leverage):
    mode, amount = sizing
    return OrderRequest.parse(
        op, symbol, direction=direction, size_mode=mode,
        target_portion_of_balance=amount if mode == "portion" else None,
        usd_amount=amount if mode == "usd" else None, close_ratio=ratio, leverage=leverage,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(btc=prices, eth=prices, aapl=prices, script=orders, start=st.integers(0, 70))
def test_invariants_hold_after_every_operation(btc, eth, aapl, script, start):
    sim = simulator({"BTC": btc * 3, "ETH": eth * 3, "AAPL": aapl * 3}, start_offset_bars=1 + start)
    for op, symbol, direction, sizing, ratio, leverage, wait in script:
        before = sim.account()
        try:
            result = sim.execute(_request(op, symbol, direction, sizing, ratio, leverage))
        except OrderRejected:
            assert sim.account() == before  # a rejection changes nothing
            result = None
        acct = sim.account()
        # equity is cash plus marked positions, and also capital + PnL − fees
        marked = sum(p.margin + p.unrealized_pnl for p in acct.positions)
        assert acct.equity == pytest.approx(acct.cash + marked, abs=1e-6)
        assert acct.equity == pytest.approx(
            acct.initial_capital + acct.realized_pnl + acct.unrealized_pnl - acct.fees_paid, abs=1e-6
        )
        if result is not None:
            for fill in result.fills:
                if fill.action == "open":
                    # no accepted order leaves the account beyond an R0 limit
                    assert fill.leverage <= LIMITS.max_effective_leverage + 1e-9
                    assert fill.notional <= LIMITS.max_order_notional_fraction * before.equity + 1e-6
                    assert acct.exposure <= LIMITS.max_effective_leverage * acct.equity + 1e-6
                    assert acct.cash >= -1e-9
        # at most one side per symbol
        assert len({p.symbol for p in acct.positions}) == len(acct.positions)
        sim.advance_to(sim.now + pd.Timedelta(minutes=15 * wait))
    _assert_checkpoints_chain(sim)


def _assert_checkpoints_chain(sim):
    for interval, step in CHECKPOINT_INTERVALS.items():
        records = sim.checkpoints.records(interval)
        previous_end = sim.broker.initial_capital
        ends = set()
        for i, rec in enumerate(records):
            assert rec.equity_start == previous_end
            assert rec.period_end not in ends
            ends.add(rec.period_end)
            if i > 0:
                assert rec.period_end - rec.period_start == step
            assert rec.period_end.value % step.value == 0
            previous_end = rec.equity_end
            expected = rec.equity_end / rec.equity_start - 1 if rec.equity_start > 0 else 0.0
            assert rec.ret == pytest.approx(expected)


def test_checkpoints_hand_computed():
    sim = simulator({"BTC": [100.0] * 4 + [110.0] * 4 + [99.0] * 8, "ETH": [10.0], "AAPL": [50.0]},
                    start_offset_bars=1)
    sim.execute(OrderRequest.parse("open", "BTC", direction="long", size_mode="usd", usd_amount=1000))
    sim.advance_to(MONDAY + pd.Timedelta(hours=3))
    fee = 0.35
    hourly = sim.checkpoints.records("1h")
    assert [c.period_end.hour for c in hourly] == [1, 2, 3]
    # BTC closes: 100 until the 01:00 bar, 110 for 01:00–02:00, 99 after
    assert hourly[0].equity_start == 10_000
    assert hourly[0].equity_end == pytest.approx(10_000 - fee)
    assert hourly[1].equity_end == pytest.approx(10_000 - fee + 100)
    assert hourly[2].equity_end == pytest.approx(10_000 - fee - 10)
    assert hourly[2].ret == pytest.approx((10_000 - fee - 10) / (10_000 - fee + 100) - 1)
    assert len(sim.checkpoints.records("15m")) == 11  # 00:30 … 03:00
    assert hourly[0].period_start == MONDAY + pd.Timedelta(minutes=15)
    assert sim.checkpoints.records("4h") == ()
    assert sim.checkpoints.equity_series("1h")[0] == 10_000


def test_replay_is_deterministic():
    closes = {"BTC": [100.0 + (i % 7) for i in range(200)], "ETH": [10.0], "AAPL": [50.0]}

    def run():
        sim = simulator(closes)
        for k in range(10):
            sim.execute(OrderRequest.parse("open", "BTC", direction="long", size_mode="usd", usd_amount=100))
            sim.advance_to(sim.now + pd.Timedelta(hours=1))
            if k % 3 == 2:
                sim.execute(OrderRequest.parse("close_all"))
        return sim.state_hash()

    assert run() == run()
