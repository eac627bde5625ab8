"""Fixtures for the trace-store tests: a fresh store per test and record factories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from traces import (
    AccountRecord,
    CheckpointRecord,
    FillRecord,
    FragmentRecord,
    MemoryEntryRecord,
    MemoryEventRecord,
    MessageRecord,
    RejectionRecord,
    RoundRecord,
    RunRecord,
    ToolCallRecord,
    TraceStore,
    close_all_stores,
    get_store,
)

START = pd.Timestamp("2025-03-03 00:00", tz="UTC")
WALL = pd.Timestamp("2026-01-15 09:30:00.123456", tz="UTC")


def build_full_round(run_id: str, account_id: str, index: int) -> RoundRecord:
    """A round holding one of every child record, with hand-chosen values.

    The account buys 0.02 BTC at 50,000 (notional 1,000 USD, crypto fee 0.035 % = 0.35 USD),
    has a second order rejected by the 20 %-of-equity rule, searches and adds a memory entry,
    and records the 1 h checkpoint that closed at the decision time (equity up 50 USD per
    round from 10,000).
    """
    decision = START + pd.Timedelta(hours=4 * index)
    wall = WALL + pd.Timedelta(minutes=index)
    return RoundRecord(
        run_id=run_id,
        account_id=account_id,
        round_index=index,
        decision_time=decision,
        termination_reason="trade_done",
        steps=3,
        input_tokens=1200,
        output_tokens=340,
        equity_before=10_000.0,
        equity_after=9_999.65,
        state_after={"cash": 8_999.65, "positions": [{"symbol": "BTC", "quantity": 0.02}]},
        tools_offered=["get_market_snapshot", "execute_trade", "memory_search", "memory_add"],
        wall_started_at=wall,
        wall_ended_at=wall + pd.Timedelta(seconds=42),
        extra={"budget": {"steps": 30}},
        messages=[
            MessageRecord(role="system", text="You trade a paper account."),
            MessageRecord(
                role="assistant",
                text="Buying a small BTC position. <TRADE_DONE>",
                reasoning="Momentum is positive and cash is ample.",
                model="mockllm/model",
                stop_reason="stop",
                input_tokens=1200,
                output_tokens=340,
                created_at=wall + pd.Timedelta(seconds=5),
            ),
        ],
        tool_calls=[
            ToolCallRecord(
                name="memory_search",
                arguments={"query": "BTC after a 3% rally"},
                result="[]",
                latency_ms=12.5,
                tool_call_id=f"call-{index}-0",
                message_index=1,
                in_schema=True,
                started_at=wall + pd.Timedelta(seconds=6),
            ),
            ToolCallRecord(
                name="execute_trade",
                arguments={"symbol": "BTC", "size_mode": "usd", "usd_amount": 1000.0},
                result="filled 0.02 BTC at 50000.0",
                latency_ms=3.25,
                tool_call_id=f"call-{index}-1",
                message_index=1,
                in_schema=True,
            ),
            ToolCallRecord(
                name="execute_trade",
                arguments={"symbol": "ETH", "size_mode": "usd", "usd_amount": 2500.0},
                error_type="rejected",
                error_message="order notional 2500.00 exceeds 20% of equity (1999.93)",
                latency_ms=1.0,
                tool_call_id=f"call-{index}-2",
                message_index=1,
                in_schema=True,
            ),
        ],
        fills=[
            FillRecord(
                symbol="BTC",
                market="crypto",
                side="buy",
                quantity=0.02,
                price=50_000.0,
                fee=0.35,
                leverage=2.0,
                position_side="long",
                tool_call_id=f"call-{index}-1",
                order_id=f"ord-{index}",
                equity_after=9_999.65,
                cash_after=8_999.65,
                state_after={"positions": [{"symbol": "BTC", "quantity": 0.02, "margin": 500.0}]},
                filled_at=decision,
            )
        ],
        rejections=[
            RejectionRecord(
                reason_code="R0-04",
                message="order notional 2500.00 exceeds 20% of equity (1999.93)",
                rejected_at=decision,
                symbol="ETH",
                market="crypto",
                operation="open",
                tool_call_id=f"call-{index}-2",
                request={"symbol": "ETH", "size_mode": "usd", "usd_amount": 2500.0},
            )
        ],
        checkpoints=[
            CheckpointRecord(
                interval="1h",
                period_end=decision,
                equity_start=10_000.0 + 50.0 * index,
                equity_end=10_050.0 + 50.0 * index,
            )
        ],
        memory_entries=[
            MemoryEntryRecord(
                entry_id=f"mem-{index}",
                market="crypto",
                condition="BTC rallies 3% in 4h",
                observation="the next 4h gave back half",
                rule="take partial profit after sharp rallies",
                embedding=[0.5, -0.25, 0.125],
                embedder="offline-hash-v1",
                created_at=decision,
                created_round=index,
            )
        ],
        memory_events=[
            MemoryEventRecord(
                kind="search",
                text="BTC after a 3% rally",
                results=[],
                created_at=decision,
                tool_call_id=f"call-{index}-0",
            ),
            MemoryEventRecord(
                kind="add",
                text="BTC rallies 3% in 4h -> the next 4h gave back half -> take partial profit",
                accepted=True,
                nearest_similarity=0.42,
                entry_id=f"mem-{index}",
                created_at=decision,
            ),
        ],
        fragments=[
            FragmentRecord(
                query="BTC after a 3% rally",
                tool_call_id=f"call-{index}-0",
                market_context={"BTC": {"price": 50_000.0, "change_4h": 0.03}},
                search_reasoning="Check what happened after similar rallies.",
                results=[],
                subsequent=[{"tool": "execute_trade", "symbol": "BTC"}],
                created_at=decision,
            )
        ],
    )


def build_run(
    run_id: str = "run-1", configuration: str = "memory", model: str = "m/x"
) -> RunRecord:
    """A run record with task arguments and versions."""
    return RunRecord(
        run_id=run_id,
        configuration=configuration,
        model=model,
        task_args={"days": 7, "interval_hours": 4},
        versions={"prompts": "memory-v2", "rules": "policy-1", "scorers": {"outcomes": "1.0"}},
        scenario="bundled-2025w10",
        seed=17,
        started_at=WALL,
    )


def build_account(run: RunRecord, account_id: str = "acct-1", **changes: object) -> AccountRecord:
    """An account of ``run`` with the spec's default capital."""
    fields: dict[str, object] = {
        "run_id": run.run_id,
        "account_id": account_id,
        "model": run.model,
        "configuration": run.configuration,
        "sample_id": f"sample-{account_id}",
        "scenario": run.scenario,
        "seed": 17,
        "started_at": WALL,
        "extra": {"arm": "memory"},
    }
    fields.update(changes)
    return AccountRecord(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "traces.duckdb"


@pytest.fixture
def store(db_path: Path) -> Iterator[TraceStore]:
    yield get_store(db_path)


@pytest.fixture(autouse=True)
def _no_leaked_stores() -> Iterator[None]:
    yield
    close_all_stores()


@pytest.fixture
def full_round() -> Callable[[str, str, int], RoundRecord]:
    return build_full_round


@pytest.fixture
def make_run() -> Callable[..., RunRecord]:
    return build_run


@pytest.fixture
def make_account() -> Callable[..., AccountRecord]:
    return build_account


@pytest.fixture
def open_account(
    store: TraceStore,
) -> Callable[..., tuple[RunRecord, AccountRecord]]:
    """Start a run (if needed) and an account in ``store``; returns both records."""

    def _open(run_id: str = "run-1", account_id: str = "acct-1", **changes: object):
        run = build_run(run_id)
        store.start_run(run)
        account = build_account(run, account_id, **changes)
        store.start_account(account)
        return run, account

    return _open
