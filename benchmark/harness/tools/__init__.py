"""Thin Inspect tools over an :class:`~benchmark.harness.session.AccountSession`."""

from __future__ import annotations

from inspect_ai.tool import Tool

from benchmark.harness.session import AccountSession
from benchmark.harness.tools.account import get_account_state, get_history_decisions
from benchmark.harness.tools.market import get_kline_history, get_market_snapshot
from benchmark.harness.tools.search import consult_search_agent
from benchmark.harness.tools.trade import execute_trade
from benchmark.harness.tools.workspace import (
    execute_shell_command,
    read_file,
    run_python_script,
    write_file,
)

BASE_TOOL_NAMES = (
    "get_market_snapshot", "get_kline_history", "get_account_state", "get_history_decisions",
    "consult_search_agent", "run_python_script", "read_file", "write_file",
    "execute_shell_command", "execute_trade",
)


def base_tools(session: AccountSession) -> list[Tool]:
    """The Base configuration's fixed tool set, bound to one account."""
    return [
        get_market_snapshot(session),
        get_kline_history(session),
        get_account_state(session),
        get_history_decisions(session),
        consult_search_agent(session),
        run_python_script(session),
        read_file(session),
        write_file(session),
        execute_shell_command(session),
        execute_trade(session),
    ]


__all__ = ["BASE_TOOL_NAMES", "base_tools"]
