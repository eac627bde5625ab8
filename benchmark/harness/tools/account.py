"""Account tools: ``get_account_state`` and ``get_history_decisions``."""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolError, tool

from benchmark.harness.session import AccountSession, to_json


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
            limit = int(limit)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"limit must be an integer, got {limit!r}") from exc
        if not 1 <= limit <= 50:
            raise ToolError("limit must be between 1 and 50")
        return to_json([d.to_dict() for d in session.history[-limit:]])

    return execute
