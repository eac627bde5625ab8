"""Several accounts trading at once in one eval keep complete, separate traces.

Four samples (arms ``a``..``d``) of one task run concurrently (``max_samples=4``) against a
scripted model whose latency differs per account, so their rounds interleave in time. Every
piece of the script is tagged with its arm and round (message text, tool-call ids, order
sizes, workspace file contents), which lets the test prove that nothing was written to the
wrong account or the wrong round.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput

from benchmark.harness.task import trading_task
from benchmark.harness.tools import base_tools
from tests.harness.helpers import (
    FIRST_DECISION,
    ScriptedTrader,
    Turn,
    base_args,
    call,
    done,
    only_run,
    reader,
    run_eval,
    scripted,
    workspaces_in,
)
from traces.reader import TraceReader

ARMS = ("a", "b", "c", "d")
ROUNDS = 6


def arm_of(account_id: str) -> str:
    """Sample ids end in ``-<arm>-e<epoch>``."""
    return account_id.rsplit("-", 2)[-2]


def order_usd(arm: str, round_index: int) -> float:
    """A margin unique to (arm, round): 100, 110, 120, 130 plus the round index."""
    return 100.0 + 10.0 * ARMS.index(arm) + round_index


def tag(arm: str, round_index: int) -> str:
    return f"[{arm} r{round_index}]"


def plan(turn: Turn) -> ModelOutput | None:
    """Per round: read the account, buy BTC, write a file; then read the file back; done."""
    arm, k = arm_of(turn.account_id), turn.round_index
    prefix = f"{arm}-r{k}-"
    if turn.step == 0:
        return scripted([
            call("get_account_state", id=prefix + "state"),
            call("execute_trade", id=prefix + "trade", operation="open", symbol="BTC",
                 direction="long", size_mode="usd", usd_amount=order_usd(arm, k)),
            call("write_file", id=prefix + "write", path="owner.txt", content=tag(arm, k)),
        ], f"{tag(arm, k)} reading, buying, noting")
    if turn.step == 1:
        return scripted([call("read_file", id=prefix + "read", path="owner.txt")],
                        f"{tag(arm, k)} checking my note")
    return done(tag(arm, k))


def latency(turn: Turn) -> float:
    """Different per account and round, so the samples' turns interleave."""
    return 0.002 * ((ARMS.index(arm_of(turn.account_id)) + turn.round_index + turn.step) % 4)


@dataclass(frozen=True)
class Concurrent:
    log: EvalLog
    trace: TraceReader
    run_id: str
    model: ScriptedTrader
    root: Path


@pytest.fixture(scope="module")
def concurrent(market_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Concurrent:
    root = tmp_path_factory.mktemp("concurrent")
    model = ScriptedTrader(plan, latency_s=latency)
    with workspaces_in(root / "workspaces"):
        task = trading_task(
            "base", base_tools, system_prompt="base",
            task_args=base_args(market_file, root / "t.duckdb", days=1.0),
            arms=[{"arm": arm} for arm in ARMS],
        )
        log = run_eval(task, model.model(), root / "logs", max_samples=4)
    trace = reader(root / "t.duckdb")
    return Concurrent(log, trace, only_run(trace), model, root)


def test_the_samples_really_ran_interleaved(concurrent: Concurrent) -> None:
    order = [arm_of(turn.account_id) for turn in concurrent.model.turns]
    assert len(order) == len(ARMS) * ROUNDS * 3
    first_done = {arm: max(i for i, a in enumerate(order) if a == arm) for arm in ARMS}
    starts = {arm: order.index(arm) for arm in ARMS}
    assert max(starts.values()) < min(first_done.values()), "samples ran one after another"


def test_every_account_completes_all_rounds(concurrent: Concurrent) -> None:
    trace, run_id = concurrent.trace, concurrent.run_id
    assert trace.runs()["status"].tolist() == ["completed"]
    accounts = trace.accounts(run_id)
    assert sorted(arm_of(a) for a in accounts["account_id"]) == list(ARMS)
    assert set(accounts["status"]) == {"completed"}
    assert [extra["arm"] for extra in accounts["extra"]] == [arm_of(a) for a in accounts["account_id"]]
    rounds = trace.rounds(run_id)
    times = [FIRST_DECISION + pd.Timedelta(hours=4 * k) for k in range(ROUNDS)]
    for account_id, group in rounds.groupby("account_id"):
        assert list(group["round_index"]) == list(range(ROUNDS)), account_id
        assert list(group["decision_time"]) == times
        assert set(group["termination_reason"]) == {"trade_done"}
        assert list(group["steps"]) == [3] * ROUNDS
    assert len(concurrent.log.samples or []) == len(ARMS)


def test_messages_stay_in_their_account_and_round(concurrent: Concurrent) -> None:
    messages = concurrent.trace.messages(concurrent.run_id)
    assistant = messages[messages["role"] == "assistant"]
    assert len(assistant) == len(ARMS) * ROUNDS * 3
    for row in assistant.itertuples():
        assert row.text.startswith(tag(arm_of(row.account_id), row.round_index)), row
    users = messages[messages["role"] == "user"]
    for row in users.itertuples():
        assert f"Decision round {row.round_index + 1} of {ROUNDS}." in row.text
        assert f"Account id: {row.account_id}" in row.text


def test_tool_calls_belong_to_the_round_of_their_message(concurrent: Concurrent) -> None:
    trace, run_id = concurrent.trace, concurrent.run_id
    calls = trace.tool_calls(run_id)
    messages = trace.messages(run_id).set_index(["account_id", "round_index", "message_index"])
    assert len(calls) == len(ARMS) * ROUNDS * 4
    for row in calls.itertuples():
        arm = arm_of(row.account_id)
        assert row.tool_call_id.startswith(f"{arm}-r{row.round_index}-"), row
        issuer = messages.loc[(row.account_id, row.round_index, row.message_index)]
        assert issuer["role"] == "assistant"
        assert issuer["text"].startswith(tag(arm, row.round_index))
        assert pd.isna(row.error_type), row.error_message


def test_fills_belong_to_their_account(concurrent: Concurrent) -> None:
    fills = concurrent.trace.fills(concurrent.run_id)
    assert len(fills) == len(ARMS) * ROUNDS
    for row in fills.itertuples():
        arm = arm_of(row.account_id)
        assert row.tool_call_id == f"{arm}-r{row.round_index}-trade"
        assert row.notional == pytest.approx(order_usd(arm, row.round_index))
    accounts = concurrent.trace.accounts(concurrent.run_id)
    for account in accounts.itertuples():
        own = fills[fills["account_id"] == account.account_id]
        margin = sum(order_usd(arm_of(account.account_id), k) for k in range(ROUNDS))
        assert own["cash_after"].iloc[-1] == pytest.approx(
            10_000.0 - margin - own["fee"].sum(), rel=1e-12)


def test_each_account_reads_only_its_own_workspace(concurrent: Concurrent) -> None:
    reads = concurrent.trace.tool_calls(concurrent.run_id, name="read_file")
    assert len(reads) == len(ARMS) * ROUNDS
    for row in reads.itertuples():
        assert row.result == tag(arm_of(row.account_id), row.round_index)
    for account_id in concurrent.trace.accounts(concurrent.run_id)["account_id"]:
        note = concurrent.root / "workspaces" / concurrent.run_id / account_id / "owner.txt"
        assert note.read_text() == tag(arm_of(account_id), ROUNDS - 1)


def test_each_account_is_scored_from_its_own_checkpoints(concurrent: Concurrent) -> None:
    trace, run_id = concurrent.trace, concurrent.run_id
    finals = trace.accounts(run_id).set_index("sample_id")["final_equity"]
    for sample in concurrent.log.samples or []:
        value = sample.scores["outcomes"].value
        assert value["return"] == pytest.approx(finals[str(sample.id)] / 10_000.0 - 1.0, rel=1e-9)
        account_id = sample.metadata["livemace"]["account_id"]
        assert len(trace.checkpoints(run_id, account_id, "1h")) == 24
