"""SCHEMA.md stays true: every table and column is documented, and its queries run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import traces
from traces import RoundRecord, TraceStore
from traces.schema import TABLE_DDL

SCHEMA_MD = Path(traces.__file__).with_name("SCHEMA.md")
RoundFactory = Callable[[str, str, int], RoundRecord]


def _documented_columns() -> dict[str, set[str]]:
    """Map each ``### `table` `` section of SCHEMA.md to the columns its table lists."""
    documented: dict[str, set[str]] = {}
    table: str | None = None
    for line in SCHEMA_MD.read_text().splitlines():
        heading = re.match(r"### `(\w+)`", line)
        if heading:
            table = heading.group(1)
            documented[table] = set()
        elif line.startswith("## "):
            table = None
        elif table and line.startswith("| `"):
            first_cell = line.split("|")[1]
            documented[table].update(re.findall(r"`(\w+)`", first_cell))
    return documented


def _sql_blocks() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", SCHEMA_MD.read_text(), flags=re.S)


def test_every_table_and_column_is_documented(store: TraceStore) -> None:
    actual: dict[str, set[str]] = {}
    for table in TABLE_DDL:
        frame = store.reader().sql(f"SELECT * FROM {table} LIMIT 0")
        actual[table] = set(frame.columns)
    assert _documented_columns() == actual


def test_schema_md_names_the_version_and_default_path() -> None:
    text = SCHEMA_MD.read_text()
    assert f"**Schema version:** `{traces.SCHEMA_VERSION}`" in text
    assert "`LIVEMACE_TRACE_DB`" in text and "`./livemace_traces.duckdb`" in text


def test_example_queries_run_and_give_hand_checked_answers(
    store: TraceStore, open_account: Callable, full_round: RoundFactory
) -> None:
    open_account(account_id="a1")
    open_account(account_id="a2")
    for index in range(2):
        store.write_round(full_round("run-1", "a1", index))
    store.write_round(full_round("run-1", "a2", 0))
    error_rate, equity, rejections = _sql_blocks()
    reader = store.reader()

    by_model = reader.sql(error_rate)
    assert by_model["calls"].tolist() == [9]  # 3 rounds x 3 calls, 1 rejected call each
    assert by_model["error_rate"].tolist() == pytest.approx([1 / 3])

    curve = reader.sql(equity, ["run-1", "a1"] * 2)
    start = pd.Timestamp("2025-03-03 00:00", tz="UTC")
    assert curve["time"].tolist() == [start - pd.Timedelta(hours=1), start,
                                      start + pd.Timedelta(hours=4)]
    assert curve["equity"].tolist() == [10_000.0, 10_050.0, 10_100.0]

    by_reason = reader.sql(rejections)
    assert by_reason.to_dict("records") == [
        {"configuration": "memory", "reason_code": "R0-04", "rejections": 3}
    ]
