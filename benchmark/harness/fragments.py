"""Build ``memory_search`` trace fragments from a finished round (pure functions).

A fragment is what the usage-quality judge reads about one retrieval: the market context the
agent had gathered before the search (snapshot and account answers of the round), its reasoning
at the moment of the call, the query, what came back, and the reasoning and trades that followed.
"""

from __future__ import annotations

import json
from typing import Any

from traces.records import FragmentRecord, RoundRecord

CONTEXT_TOOLS = {"get_market_snapshot": "market_snapshots", "get_account_state": "account_states"}


def _decoded(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_fragments(record: RoundRecord, searches: list[dict[str, Any]]) -> list[FragmentRecord]:
    """One fragment per logged search of the round, in call order."""
    calls = record.tool_calls
    position = {c.tool_call_id: i for i, c in enumerate(calls) if c.tool_call_id}
    fragments = []
    for search in searches:
        index = position.get(search["tool_call_id"])
        if index is None:
            continue
        call = calls[index]
        context: dict[str, list[Any]] = {"market_snapshots": [], "account_states": []}
        for earlier in calls[:index]:
            key = CONTEXT_TOOLS.get(earlier.name)
            if key and earlier.error_type is None:
                context[key].append(_decoded(earlier.result))
        message = record.messages[call.message_index] if call.message_index is not None else None
        reasoning = ""
        if message is not None:
            reasoning = "\n".join(part for part in (message.reasoning, message.text) if part)
        subsequent: list[dict[str, Any]] = []
        after = call.message_index if call.message_index is not None else -1
        for i, msg in enumerate(record.messages):
            if i > after and msg.role == "assistant" and (msg.text or msg.reasoning):
                subsequent.append({"reasoning": "\n".join(p for p in (msg.reasoning, msg.text) if p)})
        for later in calls[index + 1:]:
            if later.name == "execute_trade":
                subsequent.append({
                    "trade": later.arguments, "error": later.error_message,
                    "result": None if later.error_type else _decoded(later.result),
                })
        fragments.append(FragmentRecord(
            query=search["query"], tool_call_id=search["tool_call_id"], market_context=context,
            search_reasoning=reasoning, results=search["results"], subsequent=subsequent,
            created_at=record.decision_time,
        ))
    return fragments
