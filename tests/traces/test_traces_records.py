"""Validation and normalisation done by the record dataclasses themselves."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest

from traces import (
    CheckpointRecord,
    FillRecord,
    MemoryEntryRecord,
    RoundRecord,
    ScoreRecord,
    ToolCallRecord,
    checkpoint_return,
)
from traces._values import to_json

T0 = pd.Timestamp("2025-03-03 04:00", tz="UTC")


def _round(**changes: object) -> RoundRecord:
    fields: dict[str, object] = {
        "run_id": "r",
        "account_id": "a",
        "round_index": 0,
        "decision_time": T0,
        "termination_reason": "trade_done",
    }
    fields.update(changes)
    return RoundRecord(**fields)  # type: ignore[arg-type]


def test_naive_timestamp_is_refused() -> None:
    with pytest.raises(ValueError, match=r"decision_time.*no time zone"):
        _round(decision_time=pd.Timestamp("2025-03-03 04:00"))


def test_other_zones_and_datetimes_are_converted_to_utc() -> None:
    paris = dt.datetime(2025, 3, 3, 5, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    record = _round(decision_time=paris)
    assert record.decision_time == T0
    assert str(record.decision_time.tz) == "UTC"


def test_nanoseconds_are_floored_to_microseconds() -> None:
    record = _round(decision_time=pd.Timestamp("2025-03-03 04:00:00.000001999", tz="UTC"))
    assert record.decision_time == pd.Timestamp("2025-03-03 04:00:00.000001", tz="UTC")


def test_total_tokens_defaults_to_input_plus_output() -> None:
    assert _round(input_tokens=120, output_tokens=30).total_tokens == 150
    assert _round(input_tokens=120, output_tokens=30, total_tokens=200).total_tokens == 200


def test_counts_accept_numpy_integers_but_not_bools_or_negatives() -> None:
    assert _round(round_index=np.int64(3)).round_index == 3
    with pytest.raises(ValueError, match="round_index"):
        _round(round_index=True)
    with pytest.raises(ValueError, match="steps"):
        _round(steps=-1)


def test_checkpoint_return_rules() -> None:
    assert checkpoint_return(10_000.0, 10_250.0) == pytest.approx(0.025)
    assert checkpoint_return(0.0, 50.0) == 0.0
    assert checkpoint_return(-5.0, 50.0) == 0.0
    cp = CheckpointRecord(interval="4h", period_end=T0, equity_start=8_000.0, equity_end=7_800.0)
    assert cp.period_return == pytest.approx(-0.025)
    assert cp.period_start == pd.Timestamp("2025-03-03 00:00", tz="UTC")
    with pytest.raises(ValueError, match="interval"):
        CheckpointRecord(interval="2h", period_end=T0, equity_start=1.0, equity_end=1.0)  # type: ignore[arg-type]


def test_fill_notional_defaults_and_checks() -> None:
    fill = FillRecord(
        symbol="AAPL", market="us", side="buy", quantity=4, price=212.5, filled_at=T0, fee=0.85
    )
    assert fill.notional == 850.0
    with pytest.raises(ValueError, match="side"):
        FillRecord(symbol="AAPL", market="us", side="long", quantity=1, price=1, filled_at=T0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quantity"):
        FillRecord(symbol="AAPL", market="us", side="buy", quantity=0, price=1, filled_at=T0)
    with pytest.raises(ValueError, match="leverage"):
        FillRecord(
            symbol="BTC", market="crypto", side="buy", quantity=1, price=1, filled_at=T0,
            leverage=0.5,
        )


def test_score_value_and_unscored_reason_are_exclusive() -> None:
    base = {"run_id": "r", "account_id": "a", "scorer": "tool_use", "metric": "TR",
            "scorer_version": "1"}
    assert ScoreRecord(**base, value=0.7).unscored_reason is None
    undecided = ScoreRecord(**base, value=None, unscored_reason="judge output had no score")
    assert undecided.value is None
    with pytest.raises(ValueError, match="needs an unscored_reason"):
        ScoreRecord(**base, value=None)
    with pytest.raises(ValueError, match="cannot have unscored_reason"):
        ScoreRecord(**base, value=0.5, unscored_reason="x")
    with pytest.raises(ValueError, match="finite"):
        ScoreRecord(**base, value=math.nan)


def test_tool_call_checks() -> None:
    assert ToolCallRecord(name="get_account_state").ok
    assert not ToolCallRecord(name="x", error_type="timeout", error_message="10 s").ok
    with pytest.raises(ValueError, match="error_message given without error_type"):
        ToolCallRecord(name="x", error_message="boom")
    with pytest.raises(ValueError, match="arguments"):
        ToolCallRecord(name="x", arguments=[1, 2])  # type: ignore[arg-type]


def test_memory_entry_text_defaults_to_the_three_parts() -> None:
    entry = MemoryEntryRecord(
        entry_id="e1", market="us", condition="c", observation="o", rule="r", created_at=T0
    )
    assert entry.text == "c -> o -> r"
    with pytest.raises(ValueError, match="market"):
        MemoryEntryRecord(
            entry_id="e1", market="fx", condition="c", observation="o", rule="r", created_at=T0  # type: ignore[arg-type]
        )


def test_json_encoding_of_numpy_timestamps_and_non_finite_values() -> None:
    value = {"b": np.float64(1.5), "a": [np.int32(2), math.inf], "t": T0}
    assert to_json(value, "x") == '{"a": [2, null], "b": 1.5, "t": "2025-03-03T04:00:00+00:00"}'
    with pytest.raises(TypeError, match="x: value of type object"):
        to_json({"bad": object()}, "x")
