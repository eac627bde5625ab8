"""Many samples writing to one store at once: asyncio tasks and threads together."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pandas as pd

from traces import (
    MessageRecord,
    RoundRecord,
    ToolCallRecord,
    TraceReader,
    TraceStore,
)

ROUNDS = 50
CALLS_PER_ROUND = 3
START = pd.Timestamp("2025-03-03 00:00", tz="UTC")


def _round(account_id: str, index: int) -> RoundRecord:
    """A small round whose every tool call names its own account and round."""
    return RoundRecord(
        run_id="run-c",
        account_id=account_id,
        round_index=index,
        decision_time=START + pd.Timedelta(hours=4 * index),
        termination_reason="trade_done",
        steps=CALLS_PER_ROUND,
        messages=[MessageRecord(role="assistant", text=f"{account_id} round {index}")],
        tool_calls=[
            ToolCallRecord(
                name="get_market_snapshot",
                arguments={"account": account_id, "round": index, "call": call},
                result="ok",
            )
            for call in range(CALLS_PER_ROUND)
        ],
    )


def _write_account(store: TraceStore, account_id: str) -> None:
    for index in range(ROUNDS):
        store.write_round(_round(account_id, index))


async def _write_account_async(store: TraceStore, account_id: str) -> None:
    for index in range(ROUNDS):
        store.write_round(_round(account_id, index))
        await asyncio.sleep(0)  # let the other sample tasks interleave


async def _run_tasks(store: TraceStore, account_ids: list[str]) -> None:
    await asyncio.gather(*(_write_account_async(store, a) for a in account_ids))


def test_tasks_and_threads_share_one_store(
    store: TraceStore, make_run: Callable, make_account: Callable
) -> None:
    run = make_run("run-c")
    store.start_run(run)
    task_accounts = [f"task-{i}" for i in range(8)]
    thread_accounts = [f"thread-{i}" for i in range(4)]
    for account_id in task_accounts + thread_accounts:
        store.start_account(make_account(run, account_id))

    errors: list[BaseException] = []

    def thread_body(account_id: str) -> None:
        try:
            _write_account(store, account_id)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=thread_body, args=(a,)) for a in thread_accounts]
    for thread in threads:
        thread.start()
    asyncio.run(_run_tasks(store, task_accounts))
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    reader = TraceReader(store.path)
    rounds = reader.rounds("run-c")
    calls = reader.tool_calls("run-c")
    for account_id in task_accounts + thread_accounts:
        indices = rounds.loc[rounds["account_id"] == account_id, "round_index"].tolist()
        assert indices == list(range(ROUNDS))
    assert len(calls) == 12 * ROUNDS * CALLS_PER_ROUND
    assert all(
        args["account"] == account and args["round"] == index and args["call"] == call
        for args, account, index, call in zip(
            calls["arguments"], calls["account_id"], calls["round_index"], calls["call_index"],
            strict=True,
        )
    )
    messages = reader.messages("run-c")
    assert (messages["text"] == messages["account_id"] + " round "
            + messages["round_index"].astype(str)).all()


def test_reader_snapshots_never_show_half_a_round(
    store: TraceStore, make_run: Callable, make_account: Callable
) -> None:
    run = make_run("run-c")
    store.start_run(run)
    store.start_account(make_account(run, "writer"))
    done = threading.Event()
    seen: list[int] = []

    def poll() -> None:
        reader = store.reader()
        while not done.is_set():
            loaded = reader.load_rounds("run-c", "writer")
            assert [r.round_index for r in loaded] == list(range(len(loaded)))
            assert all(len(r.tool_calls) == CALLS_PER_ROUND for r in loaded)
            seen.append(len(loaded))
        reader.close()

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        _write_account(store, "writer")
    finally:
        done.set()
        poller.join(timeout=60)
    assert seen, "the reader thread never ran"
    assert seen == sorted(seen)
    assert len(store.reader().load_rounds("run-c", "writer")) == ROUNDS


def test_concurrent_start_run_inserts_one_row(store: TraceStore, make_run: Callable) -> None:
    workers = 4
    results: list[bool] = []
    barrier = threading.Barrier(workers)

    def start() -> None:
        barrier.wait()
        results.append(store.start_run(make_run("run-shared")))

    threads = [threading.Thread(target=start) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * (workers - 1) + [True]
    assert len(store.reader().runs()) == 1
