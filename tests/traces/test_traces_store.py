"""Writing to the trace store: round trips of every record type and the write rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from traces import (
    CheckpointRecord,
    MemoryEntryRecord,
    RoundRecord,
    ScoreRecord,
    StoreInUseError,
    TraceConflictError,
    TraceReader,
    TraceStore,
    UnknownRecordError,
    get_store,
)

RoundFactory = Callable[[str, str, int], RoundRecord]


def test_full_round_round_trips_every_child_record(
    store: TraceStore, open_account: Callable, full_round: RoundFactory
) -> None:
    open_account()
    written = [full_round("run-1", "acct-1", i) for i in range(3)]
    for record in written:
        store.write_round(record)

    loaded = store.reader().load_rounds("run-1", "acct-1")

    assert loaded == written
    first = loaded[0]
    assert first.fills[0].notional == 1_000.0
    assert first.fills[0].fee == 0.35
    assert first.memory_entries[0].embedding == [0.5, -0.25, 0.125]
    assert first.checkpoints[0].period_return == pytest.approx(0.005)


def test_round_tables_hold_the_expected_rows(
    store: TraceStore, open_account: Callable, full_round: RoundFactory
) -> None:
    open_account()
    store.write_round(full_round("run-1", "acct-1", 0))
    reader = store.reader()

    rounds = reader.rounds("run-1")
    assert rounds.loc[0, "total_tokens"] == 1540
    assert list(rounds.loc[0, "tools_offered"]) == [
        "get_market_snapshot", "execute_trade", "memory_search", "memory_add"
    ]
    assert rounds.loc[0, "state_after"]["cash"] == 8_999.65
    calls = reader.tool_calls("run-1", "acct-1")
    assert list(calls["name"]) == ["memory_search", "execute_trade", "execute_trade"]
    assert list(calls["call_index"]) == [0, 1, 2]
    assert calls.loc[1, "arguments"] == {"symbol": "BTC", "size_mode": "usd", "usd_amount": 1000.0}
    assert calls["error_type"].isna().tolist() == [True, True, False]
    assert reader.tool_calls("run-1", name="execute_trade").shape[0] == 2
    messages = reader.messages("run-1", "acct-1", round_index=0)
    assert messages.loc[1, "reasoning"] == "Momentum is positive and cash is ample."
    assert reader.rejections("run-1").loc[0, "reason_code"] == "R0-04"
    assert reader.fills("run-1").loc[0, "notional"] == 1_000.0
    events = reader.memory_events("run-1", kind="add")
    assert events.loc[0, "nearest_similarity"] == 0.42
    assert bool(events.loc[0, "accepted"]) is True
    fragment = reader.fragments("run-1").iloc[0]
    assert fragment["market_context"] == {"BTC": {"change_4h": 0.03, "price": 50_000.0}}
    entries = reader.memory_entries("run-1", market="crypto")
    assert entries.loc[0, "created_round"] == 0


def test_run_and_account_round_trip_and_finish(
    store: TraceStore, make_run: Callable, make_account: Callable
) -> None:
    run = make_run()
    account = make_account(run)
    assert store.start_run(run) is True
    store.start_account(account)
    reader = store.reader()
    assert reader.run("run-1") == run
    assert reader.account("run-1", "acct-1") == account

    end = pd.Timestamp("2026-01-15 10:00", tz="UTC")
    store.finish_account("run-1", "acct-1", "completed", final_equity=10_432.5, ended_at=end)
    store.finish_run("run-1", "completed", ended_at=end)

    finished = reader.account("run-1", "acct-1")
    assert finished.status == "completed"
    assert (finished.final_equity, finished.ended_at) == (10_432.5, end)
    assert reader.run("run-1").status == "completed"
    assert reader.runs().loc[0, "writer_pid"] > 0


def test_scores_round_trip_including_undecided_rows(
    store: TraceStore, open_account: Callable
) -> None:
    open_account()
    at = pd.Timestamp("2026-01-16 08:00", tz="UTC")
    scores = [
        ScoreRecord(
            run_id="run-1", account_id="acct-1", scorer="tool_use", metric="TR", value=0.8,
            scorer_version="1.2", rubric_version="tcs-3", judge_model="openai/gpt-5.4",
            details={"raw": 8}, created_at=at,
        ),
        ScoreRecord(
            run_id="run-1", account_id="acct-1", scorer="tool_use", metric="IE", value=None,
            unscored_reason="judge answer had no score", scorer_version="1.2",
            rubric_version="tcs-3", judge_model="openai/gpt-5.4", created_at=at,
        ),
        ScoreRecord(
            run_id="run-1", account_id=None, scorer="memory", metric="dMDD_norm", value=1.0,
            scorer_version="0.9", subject="cross-model", created_at=at,
        ),
    ]
    assert store.write_scores(scores) == 3
    reader = store.reader()
    assert reader.load_scores("run-1") == scores
    frame = reader.scores("run-1", scorer="tool_use")
    assert frame["value"].isna().tolist() == [False, True]
    assert frame.loc[0, "details"] == {"raw": 8}


def test_many_scores_in_one_batch_and_rescoring_appends(
    store: TraceStore, open_account: Callable
) -> None:
    open_account()
    batch = [
        ScoreRecord(run_id="run-1", account_id="acct-1", scorer="memory", metric="MCQ",
                    value=i / 449, scorer_version="1", subject=f"entry-{i}")
        for i in range(450)  # more rows than one INSERT statement carries
    ]
    assert store.write_scores(batch) == 450
    rescored = [ScoreRecord(run_id="run-1", account_id="acct-1", scorer="memory", metric="MCQ",
                            value=0.5, scorer_version="2", subject="entry-0")]
    store.write_scores(rescored)
    frame = store.reader().scores("run-1", "acct-1", metric="MCQ")
    assert len(frame) == 451
    assert frame.loc[frame["scorer_version"] == "1", "value"].sum() == pytest.approx(225.0)
    assert frame["subject"].iloc[-1] == "entry-0"


def test_scores_need_a_known_run_and_account(store: TraceStore, open_account: Callable) -> None:
    open_account()
    bad = ScoreRecord(run_id="run-1", account_id="ghost", scorer="s", metric="m", value=1.0,
                      scorer_version="1")
    with pytest.raises(UnknownRecordError, match="no account 'ghost'"):
        store.write_scores([bad])
    assert store.reader().scores("run-1").empty


def test_round_indices_must_be_contiguous_from_zero(
    store: TraceStore, open_account: Callable, full_round: RoundFactory
) -> None:
    open_account()
    with pytest.raises(TraceConflictError, match="expects round 0 next, got round 1"):
        store.write_round(full_round("run-1", "acct-1", 1))
    store.write_round(full_round("run-1", "acct-1", 0))
    with pytest.raises(TraceConflictError, match="expects round 1 next, got round 0"):
        store.write_round(full_round("run-1", "acct-1", 0))


def test_rounds_need_a_running_account(
    store: TraceStore, open_account: Callable, full_round: RoundFactory
) -> None:
    with pytest.raises(UnknownRecordError, match="no account 'acct-1' in run 'run-1'"):
        store.write_round(full_round("run-1", "acct-1", 0))
    open_account()
    store.finish_account("run-1", "acct-1", "failed", error="model crashed")
    with pytest.raises(TraceConflictError, match="status 'failed'"):
        store.write_round(full_round("run-1", "acct-1", 0))


def test_start_run_is_shared_by_samples_but_checks_identity(
    store: TraceStore, make_run: Callable
) -> None:
    assert store.start_run(make_run()) is True
    assert store.start_run(make_run()) is False
    with pytest.raises(TraceConflictError, match="exists for configuration 'memory'"):
        store.start_run(make_run(configuration="rules"))
    store.finish_run("run-1", "cancelled")
    with pytest.raises(TraceConflictError, match="already ended with status 'cancelled'"):
        store.start_run(make_run())


def test_accounts_need_their_run_and_unique_ids(
    store: TraceStore, make_run: Callable, make_account: Callable, full_round: RoundFactory
) -> None:
    run = make_run()
    with pytest.raises(UnknownRecordError, match="no run 'run-1'"):
        store.start_account(make_account(run))
    store.start_run(run)
    store.start_account(make_account(run))
    with pytest.raises(TraceConflictError, match="already exists"):
        store.start_account(make_account(run))


def test_replacing_an_account_deletes_its_old_data(
    store: TraceStore, make_run: Callable, make_account: Callable, full_round: RoundFactory
) -> None:
    run = make_run()
    store.start_run(run)
    store.start_account(make_account(run))
    store.write_round(full_round("run-1", "acct-1", 0))
    store.write_round(full_round("run-1", "acct-1", 1))

    store.start_account(make_account(run, initial_capital=5_000.0), replace=True)

    reader = store.reader()
    assert reader.rounds("run-1").empty
    assert reader.tool_calls("run-1").empty
    assert reader.memory_entries("run-1").empty
    assert reader.account("run-1", "acct-1").initial_capital == 5_000.0
    store.write_round(full_round("run-1", "acct-1", 0))
    assert len(reader.load_rounds("run-1", "acct-1")) == 1


def test_standalone_checkpoints_and_memory_entries(
    store: TraceStore, open_account: Callable
) -> None:
    open_account()
    end = pd.Timestamp("2025-03-10 00:00", tz="UTC")
    checkpoint = CheckpointRecord(interval="1d", period_end=end, equity_start=10_000.0,
                                  equity_end=9_500.0)
    store.write_checkpoints("run-1", "acct-1", [checkpoint])
    with pytest.raises(TraceConflictError, match="checkpoints"):
        store.write_checkpoints("run-1", "acct-1", [checkpoint])
    entry = MemoryEntryRecord(entry_id="m1", market="us", condition="c", observation="o",
                              rule="r", created_at=end)
    store.add_memory_entry("run-1", "acct-1", entry)
    reader = store.reader()
    returns = reader.checkpoints("run-1", "acct-1", "1d")["period_return"].tolist()
    assert returns == pytest.approx([-0.05])
    assert reader.load_memory_entries("run-1", "acct-1") == [entry]


def test_finish_requires_a_final_status(store: TraceStore, open_account: Callable) -> None:
    open_account()
    with pytest.raises(ValueError, match="final status"):
        store.finish_account("run-1", "acct-1", "running")  # type: ignore[arg-type]
    with pytest.raises(UnknownRecordError, match="no run 'nope'"):
        store.finish_run("nope")


def test_get_store_shares_one_instance_per_resolved_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = get_store(tmp_path / "a" / "t.duckdb")
    assert (tmp_path / "a").is_dir()
    assert get_store(str(tmp_path / "a" / ".." / "a" / "t.duckdb")) is first
    with pytest.raises(StoreInUseError, match=r"use traces\.get_store"):
        TraceStore(tmp_path / "a" / "t.duckdb")
    monkeypatch.setenv("LIVEMACE_TRACE_DB", str(tmp_path / "a" / "t.duckdb"))
    assert get_store() is first
    first.close()
    assert first.closed
    reopened = get_store(tmp_path / "a" / "t.duckdb")
    assert reopened is not first and not reopened.closed


def test_default_path_is_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVEMACE_TRACE_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    store = get_store()
    assert store.path == str(tmp_path.resolve() / "livemace_traces.duckdb")
    store.close()
    assert TraceReader().path == store.path
