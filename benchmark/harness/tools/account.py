"""Account tools: ``get_account_state`` and ``get_history_decisions``."""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolError, tool

from benchmark.harness.session import AccountSession, bounded_int, to_json


@tool
def get_account_state(session: AccountSession) -> Tool:
    async def execute() -> str:
        """Cash, equity, margin, exposure, PnL, fees and every open position, marked at the current time."""
        return to_json(session.sim.account().to_dict())

    return execute


@tool
def get_history_decisions(session: AccountSession) -> Tool:
    async def execute(limit: int = 10) -> str:
        """Your most recent earlier decision rounds: time, trades, refused orders, closing note, equity after.

        Args:
            limit: How many rounds to return (latest ones), 1 to 50.
        """
        try:
            count = bounded_int("limit", limit, 1, 50)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        return to_json([d.to_dict() for d in session.history[-count:]])

    return execute
