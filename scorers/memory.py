"""Memory metric family: MCQ, MUQ, ΔMDD_norm, ΔTL_norm and the Memory Score (MS).

Definitions (SPEC §5, "Memory"):

* **MCQ** (memory content quality): judges rate sampled memory entries on generalizability,
  information density and diversity contribution (integers 0–5). Per entry the three are
  averaged; the mean over entries is divided by 5.
* **MUQ** (memory usage quality): judges rate sampled ``memory_search`` fragments on retrieval
  timing and memory adoption (0–5). Per fragment the two are averaged; the mean is divided by 5.
* Reported MCQ/MUQ are the mean over the judges that produced a value.
* **ΔMDD** and **ΔTL**: how much the memory account improved on its matched memory-free account
  (same market trajectory), each min–max normalised across the evaluated models.
* **MS** = mean(MCQ, MUQ, ΔMDD_norm, ΔTL_norm).

Unscored items and judges are left out of means and reported with a reason; an unscored value
is ``None``, never 0.

The module is mostly pure functions; the two coroutines at the end (:func:`score_memory_content`,
:func:`score_memory_usage`) are the thin layer that calls judge models through Inspect.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import numpy as np
import pandas as pd
from inspect_ai.model import Model
from inspect_ai.util import collect

from scorers.judges import (
    JudgeResult,
    ParseOutcome,
    Rubric,
    load_rubric,
    parse_judge_json,
    run_judge,
)

__all__ = [
    "CONTENT_DIMENSIONS",
    "CONTENT_FIELDS",
    "NEUTRAL_NORMALISED",
    "SCALE_MAX",
    "SCORER_VERSION",
    "USAGE_DIMENSIONS",
    "USAGE_FIELDS",
    "MemoryInputs",
    "MemoryResult",
    "combine_judges",
    "content_payload",
    "delta_mdd",
    "delta_tail_loss",
    "mcq_from_scores",
    "memory_score",
    "memory_scores_across_models",
    "minmax_normalise",
    "muq_from_scores",
    "parse_content_reply",
    "parse_usage_reply",
    "sample_items",
    "score_memory_content",
    "score_memory_usage",
    "usage_payload",
]

SCORER_VERSION = "memory-1.0"
SCALE_MAX = 5
CONTENT_DIMENSIONS: tuple[str, ...] = (
    "generalizability",
    "information_density",
    "diversity_contribution",
)
USAGE_DIMENSIONS: tuple[str, ...] = ("retrieval_timing", "memory_adoption")
CONTENT_FIELDS: tuple[str, ...] = ("id", "condition", "observation", "rule")
USAGE_FIELDS: tuple[str, ...] = (
    "id",
    "market_context",
    "search_reasoning",
    "query",
    "results",
    "subsequent",
)
CONTENT_RUBRIC = "memory_content"
USAGE_RUBRIC = "memory_usage"
NEUTRAL_NORMALISED = 0.5
"""Value :func:`minmax_normalise` gives every model when the values have no spread."""

T = TypeVar("T")
Records: TypeAlias = Sequence[Mapping[str, Any]] | pd.DataFrame
ItemScores: TypeAlias = Mapping[Any, Mapping[str, int]]


# --------------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------------


def sample_items(items: Sequence[T], n: int | None, seed: int) -> list[T]:
    """Pick ``n`` items without replacement, deterministically for a given ``seed``.

    Uses ``numpy.random.default_rng(seed)``. The chosen items keep their original order (the
    judge then reads entries chronologically). ``n=None`` or ``n >= len(items)`` keeps all.
    """
    if n is None or n >= len(items):
        return list(items)
    if n < 0:
        raise ValueError(f"sample size must be non-negative, got {n}")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(items), size=n, replace=False))
    return [items[int(i)] for i in chosen]


# --------------------------------------------------------------------------------------------
# Judge scores -> MCQ / MUQ
# --------------------------------------------------------------------------------------------


def _normalised_mean(per_item: ItemScores, dims: Sequence[str]) -> float | None:
    """Mean over items of the mean over ``dims``, divided by :data:`SCALE_MAX`."""
    if not per_item:
        return None
    item_means = []
    for item_id, scores in per_item.items():
        missing = [d for d in dims if d not in scores]
        if missing:
            raise ValueError(f"item {item_id!r} lacks dimension(s) {missing}")
        for dim in dims:
            if not 0 <= scores[dim] <= SCALE_MAX:
                raise ValueError(f"item {item_id!r}: {dim}={scores[dim]} is outside 0..{SCALE_MAX}")
        item_means.append(sum(scores[d] for d in dims) / len(dims))
    return sum(item_means) / len(item_means) / SCALE_MAX


def mcq_from_scores(per_entry: ItemScores) -> float | None:
    """MCQ in [0, 1] from one judge's scores; ``None`` when no entry was scored."""
    return _normalised_mean(per_entry, CONTENT_DIMENSIONS)


def muq_from_scores(per_fragment: ItemScores) -> float | None:
    """MUQ in [0, 1] from one judge's scores; ``None`` when no fragment was scored."""
    return _normalised_mean(per_fragment, USAGE_DIMENSIONS)


def combine_judges(values: Mapping[str, float | None]) -> float | None:
    """Mean of the judges that produced a value; ``None`` when none did."""
    scored = [v for v in values.values() if v is not None]
    return sum(scored) / len(scored) if scored else None


# --------------------------------------------------------------------------------------------
# Outcome deltas and normalisation
# --------------------------------------------------------------------------------------------


def _require_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def delta_mdd(mdd_memory: float, mdd_free: float) -> float:
    """Change in maximum drawdown from the memory-free to the memory account.

    MDD is ``min_t V_t / max_{s<=t} V_s - 1`` and therefore ``<= 0`` (a 20% drawdown is -0.20).
    ``mdd_memory - mdd_free`` is positive when the memory account's worst decline was smaller:
    -0.10 against -0.20 gives +0.10. Positive MDD values are rejected, since they signal a
    drawdown passed as a positive magnitude, which would flip the sign of the result.
    """
    for name, value in (("mdd_memory", mdd_memory), ("mdd_free", mdd_free)):
        _require_finite(name, value)
        if value > 0:
            raise ValueError(f"{name} must be <= 0 (drawdown as a negative return), got {value}")
    return mdd_memory - mdd_free


def delta_tail_loss(tl_memory: float, tl_free: float) -> float:
    """Change in TailLoss from the memory-free to the memory account.

    TailLoss is the signed mean of the worst 5% of interval returns (usually negative, e.g.
    -0.03). ``tl_memory - tl_free`` is positive when the memory account's bad intervals lost
    less: -0.02 against -0.03 gives +0.01.
    """
    _require_finite("tl_memory", tl_memory)
    _require_finite("tl_free", tl_free)
    return tl_memory - tl_free


def minmax_normalise(values: Mapping[str, float]) -> dict[str, float]:
    """Rescale values across models to [0, 1]: ``(x - min) / (max - min)``.

    When every value is equal (including the single-model case) the spread is zero and the
    data cannot tell the models apart. Each model then gets :data:`NEUTRAL_NORMALISED` (0.5),
    the midpoint of the scale: 0 or 1 would claim the worst or best possible improvement from
    no evidence and move MS by a quarter point, while 0.5 contributes a neutral, comparable term.
    """
    for key, value in values.items():
        _require_finite(f"value for {key!r}", value)
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high == low:
        return {key: NEUTRAL_NORMALISED for key in values}
    return {key: (value - low) / (high - low) for key, value in values.items()}


# --------------------------------------------------------------------------------------------
# Memory Score
# --------------------------------------------------------------------------------------------


def memory_score(
    mcq: float | None,
    muq: float | None,
    dmdd_norm: float | None,
    dtl_norm: float | None,
) -> float | None:
    """MS = equal-weight mean of the four components; ``None`` when any component is missing."""
    parts = (("MCQ", mcq), ("MUQ", muq), ("ΔMDD_norm", dmdd_norm), ("ΔTL_norm", dtl_norm))
    present = [(name, value) for name, value in parts if value is not None]
    if len(present) < len(parts):
        return None
    for name, value in present:
        _require_finite(name, value)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return sum(value for _, value in present) / len(present)


@dataclass(frozen=True)
class MemoryInputs:
    """Per-model inputs to the Memory Score.

    ``mcq``/``muq`` are judge-combined values in [0, 1] (``None`` if unscored). The outcome
    fields are the 1 h MDD and TailLoss of the memory account and of its matched memory-free
    account; ``None`` when that account is unavailable.
    """

    mcq: float | None
    muq: float | None
    mdd_memory: float | None
    mdd_free: float | None
    tail_loss_memory: float | None
    tail_loss_free: float | None


@dataclass(frozen=True)
class MemoryResult:
    """Memory metrics of one model after cross-model normalisation.

    ``reason`` explains a ``None`` MS (or a ``None`` component); it is ``None`` when complete.
    """

    mcq: float | None
    muq: float | None
    delta_mdd: float | None
    delta_tail_loss: float | None
    delta_mdd_norm: float | None
    delta_tail_loss_norm: float | None
    ms: float | None
    reason: str | None
    scorer_version: str = SCORER_VERSION


def _deltas(inputs: MemoryInputs) -> tuple[float | None, float | None]:
    dmdd = (
        delta_mdd(inputs.mdd_memory, inputs.mdd_free)
        if inputs.mdd_memory is not None and inputs.mdd_free is not None
        else None
    )
    dtl = (
        delta_tail_loss(inputs.tail_loss_memory, inputs.tail_loss_free)
        if inputs.tail_loss_memory is not None and inputs.tail_loss_free is not None
        else None
    )
    return dmdd, dtl


def _missing_reasons(inputs: MemoryInputs, dmdd: float | None, dtl: float | None) -> list[str]:
    reasons = []
    if inputs.mcq is None:
        reasons.append("MCQ unscored")
    if inputs.muq is None:
        reasons.append("MUQ unscored")
    if dmdd is None:
        reasons.append("ΔMDD unavailable (memory or memory-free MDD missing)")
    if dtl is None:
        reasons.append("ΔTL unavailable (memory or memory-free TailLoss missing)")
    return reasons


def memory_scores_across_models(per_model: Mapping[str, MemoryInputs]) -> dict[str, MemoryResult]:
    """Compute every model's memory metrics; the entry point whenever models are compared.

    ΔMDD and ΔTL are min–max normalised over the models that have them (see
    :func:`minmax_normalise` for the no-spread case), so adding or removing a model can change
    the other models' normalised values and MS. MS is ``None``, with a reason, for a model
    whose MCQ, MUQ or outcome deltas are missing.
    """
    deltas = {model: _deltas(inputs) for model, inputs in per_model.items()}
    mdd_norm = minmax_normalise({m: d[0] for m, d in deltas.items() if d[0] is not None})
    tl_norm = minmax_normalise({m: d[1] for m, d in deltas.items() if d[1] is not None})
    results: dict[str, MemoryResult] = {}
    for model, inputs in per_model.items():
        dmdd, dtl = deltas[model]
        reasons = _missing_reasons(inputs, dmdd, dtl)
        results[model] = MemoryResult(
            mcq=inputs.mcq,
            muq=inputs.muq,
            delta_mdd=dmdd,
            delta_tail_loss=dtl,
            delta_mdd_norm=mdd_norm.get(model),
            delta_tail_loss_norm=tl_norm.get(model),
            ms=memory_score(inputs.mcq, inputs.muq, mdd_norm.get(model), tl_norm.get(model)),
            reason="; ".join(reasons) if reasons else None,
        )
    return results


# --------------------------------------------------------------------------------------------
# Judge payloads and reply parsing
# --------------------------------------------------------------------------------------------


def _as_records(rows: Records) -> list[dict[str, Any]]:
    if isinstance(rows, pd.DataFrame):
        return [dict(r) for r in rows.to_dict(orient="records")]
    return [dict(r) for r in rows]


def _check_fields(records: Sequence[Mapping[str, Any]], fields: Sequence[str], kind: str) -> None:
    seen: set[str] = set()
    for position, record in enumerate(records):
        missing = [f for f in fields if f not in record]
        if missing:
            raise ValueError(f"{kind} #{position} lacks field(s) {missing}")
        key = str(record["id"])
        if key in seen:
            raise ValueError(f"{kind} id {record['id']!r} occurs more than once")
        seen.add(key)


def _json_default(value: Any) -> Any:
    """JSON fallback for values that come out of DataFrames and the trace store."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _payload(records: Sequence[Mapping[str, Any]], fields: Sequence[str], list_key: str) -> str:
    body = {list_key: [{f: record[f] for f in fields} for record in records]}
    return json.dumps(body, ensure_ascii=False, indent=1, default=_json_default)


def content_payload(entries: Records) -> str:
    """JSON the content judge receives: ``{"memories": [{id, condition, observation, rule}]}``."""
    records = _as_records(entries)
    _check_fields(records, CONTENT_FIELDS, "memory entry")
    return _payload(records, CONTENT_FIELDS, "memories")


def usage_payload(fragments: Records) -> str:
    """JSON the usage judge receives: ``{"fragments": [{id, market_context, search_reasoning,
    query, results, subsequent}]}``."""
    records = _as_records(fragments)
    _check_fields(records, USAGE_FIELDS, "memory_search fragment")
    return _payload(records, USAGE_FIELDS, "fragments")


def parse_content_reply(text: str, expected_ids: Sequence[str | int]) -> ParseOutcome:
    """Validate a content judge reply (``{"memories": [{id, 3 dimensions}]}``)."""
    return parse_judge_json(text, "memories", CONTENT_DIMENSIONS, expected_ids, 0, SCALE_MAX)


def parse_usage_reply(text: str, expected_ids: Sequence[str | int]) -> ParseOutcome:
    """Validate a usage judge reply (``{"fragments": [{id, 2 dimensions}]}``)."""
    return parse_judge_json(text, "fragments", USAGE_DIMENSIONS, expected_ids, 0, SCALE_MAX)


# --------------------------------------------------------------------------------------------
# Inspect-facing coroutines
# --------------------------------------------------------------------------------------------


async def score_memory_content(
    entries: Records,
    judges: Sequence[tuple[str, Model]],
    n: int | None,
    seed: int,
    max_attempts: int = 3,
) -> dict[str, Any]:
    """Judge a sample of memory entries with every judge and compute MCQ.

    Returns the record described in :func:`_judged_metric` with ``metric="mcq"``.
    """
    return await _judged_metric(
        metric="mcq",
        records=_as_records(entries),
        judges=judges,
        n=n,
        seed=seed,
        max_attempts=max_attempts,
        rubric=load_rubric(CONTENT_RUBRIC),
        build_payload=content_payload,
        parse=parse_content_reply,
        reduce=mcq_from_scores,
        kind="memory entries",
    )


async def score_memory_usage(
    fragments: Records,
    judges: Sequence[tuple[str, Model]],
    n: int | None,
    seed: int,
    max_attempts: int = 3,
) -> dict[str, Any]:
    """Judge a sample of ``memory_search`` fragments with every judge and compute MUQ.

    Returns the record described in :func:`_judged_metric` with ``metric="muq"``.
    """
    return await _judged_metric(
        metric="muq",
        records=_as_records(fragments),
        judges=judges,
        n=n,
        seed=seed,
        max_attempts=max_attempts,
        rubric=load_rubric(USAGE_RUBRIC),
        build_payload=usage_payload,
        parse=parse_usage_reply,
        reduce=muq_from_scores,
        kind="memory_search fragments",
    )


async def _judged_metric(
    *,
    metric: str,
    records: list[dict[str, Any]],
    judges: Sequence[tuple[str, Model]],
    n: int | None,
    seed: int,
    max_attempts: int,
    rubric: Rubric,
    build_payload: Callable[[Records], str],
    parse: Callable[[str, Sequence[str | int]], ParseOutcome],
    reduce: Callable[[ItemScores], float | None],
    kind: str,
) -> dict[str, Any]:
    """Sample, ask each judge once (with retries) and reduce to a judge-averaged value.

    The returned dict holds: ``metric``, ``value`` (judge mean or ``None``), ``reason`` (why
    ``value`` is ``None``), ``per_judge`` (label -> judge_model, value, n_scored, unscored
    reasons, attempts, per-item scores), ``n_available``, ``n_sampled``, ``sample_ids``,
    ``sample_size``, ``seed``, ``rubric``, ``rubric_version`` and ``scorer_version``.
    """
    if not judges:
        raise ValueError("at least one judge model is required (see scorers.judges.judge_models)")
    sample = sample_items(records, n, seed)
    ids = [str(r["id"]) for r in sample]
    record: dict[str, Any] = {
        "metric": metric,
        "value": None,
        "reason": None,
        "per_judge": {},
        "n_available": len(records),
        "n_sampled": len(sample),
        "sample_ids": ids,
        "sample_size": n,
        "seed": seed,
        "rubric": rubric.name,
        "rubric_version": rubric.version,
        "scorer_version": SCORER_VERSION,
    }
    if not sample:
        record["reason"] = f"no {kind} to judge"
        return record
    payload = build_payload(sample)
    results: list[JudgeResult] = await collect(
        *(
            run_judge(model, rubric, payload, lambda text: parse(text, ids), max_attempts)
            for _, model in judges
        )
    )
    values: dict[str, float | None] = {}
    for (label, _), result in zip(judges, results, strict=True):
        values[label] = reduce(result.scores)
        record["per_judge"][label] = {
            "judge_model": result.judge_model,
            "value": values[label],
            "n_scored": len(result.scores),
            "unscored": result.unscored,
            "attempts": result.attempts,
            "problems": result.problems,
            "scores": result.scores,
        }
    record["value"] = combine_judges(values)
    if record["value"] is None:
        record["reason"] = f"no judge produced a valid score for any of the sampled {kind}"
    return record


# --------------------------------------------------------------------------------------------
# Inspect adapter: the `memory` scorer and its run-level metrics
# --------------------------------------------------------------------------------------------

MEMORY_ARM = "memory"
FREE_ARM = "memory_free"
COUNT_KEYS = ("searches", "adds", "store_size", "rejected_duplicates")


def _nan_if_none(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _arm_values(scores: Sequence[Any], arm: str, key: str) -> list[float]:
    values = []
    for sample in scores:
        score = getattr(sample, "score", sample)  # SampleScore or Score
        if (score.metadata or {}).get("arm", MEMORY_ARM) != arm:
            continue
        value = score.value.get(key) if isinstance(score.value, dict) else None
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            values.append(float(value))
    return values


def _mean_or_nan(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def run_memory_inputs(scores: Sequence[Any]) -> MemoryInputs:
    """The run's memory inputs from its per-sample scores (memory and memory-free arms)."""

    def one(arm: str, key: str) -> float | None:
        values = _arm_values(scores, arm, key)
        return float(np.mean(values)) if values else None

    return MemoryInputs(
        mcq=one(MEMORY_ARM, "mcq"), muq=one(MEMORY_ARM, "muq"),
        mdd_memory=one(MEMORY_ARM, "mdd"), mdd_free=one(FREE_ARM, "mdd"),
        tail_loss_memory=one(MEMORY_ARM, "tail_loss"), tail_loss_free=one(FREE_ARM, "tail_loss"),
    )


def _metrics() -> list[Any]:
    from inspect_ai.scorer import metric

    def arm_mean(key: str, arm: str = MEMORY_ARM) -> Any:
        @metric(name=key)
        def _metric() -> Any:
            return lambda scores: _mean_or_nan(_arm_values(scores, arm, key))

        return _metric()

    @metric(name="delta_mdd")
    def delta_mdd_metric() -> Any:
        def compute(scores: Any) -> float:
            inputs = run_memory_inputs(scores)
            return _nan_if_none(_deltas(inputs)[0])

        return compute

    @metric(name="delta_tail_loss")
    def delta_tl_metric() -> Any:
        def compute(scores: Any) -> float:
            inputs = run_memory_inputs(scores)
            return _nan_if_none(_deltas(inputs)[1])

        return compute

    @metric(name="ms")
    def ms_metric() -> Any:
        def compute(scores: Any) -> float:
            result = memory_scores_across_models({"run": run_memory_inputs(scores)})["run"]
            return _nan_if_none(result.ms)

        return compute

    return [
        arm_mean("mcq"), arm_mean("muq"), delta_mdd_metric(), delta_tl_metric(), ms_metric(),
        *(arm_mean(key) for key in COUNT_KEYS),
    ]


SNAPSHOT_FIELDS = ("symbol", "price", "change_24h_pct", "market_status")
POSITION_FIELDS = ("symbol", "direction", "quantity", "entry_price", "leverage", "unrealized_pnl")


def compact_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's view of a fragment's market context: the fields that bear on timing.

    Snapshots keep symbol, price, 24 h change and market status; account states keep equity,
    cash, effective leverage and each position's symbol, side, size, entry, leverage and PnL.
    """
    snapshots = [
        {k: snap.get(k) for k in SNAPSHOT_FIELDS}
        for snap in context.get("market_snapshots") or [] if isinstance(snap, Mapping)
    ]
    accounts = [
        {
            "equity": state.get("equity"), "cash": state.get("cash"),
            "effective_leverage": state.get("effective_leverage"),
            "positions": [{k: p.get(k) for k in POSITION_FIELDS} for p in state.get("positions") or []],
        }
        for state in context.get("account_states") or [] if isinstance(state, Mapping)
    ]
    return {"market_snapshots": snapshots, "account_states": accounts}


def memory_scorer(
    content_sample: int | None = 20,
    usage_sample: int | None = 20,
    seed: int = 0,
    interval: str = "1h",
) -> Any:
    """Inspect scorer of the memory configuration.

    Per sample: the account's 1 h MDD and TailLoss, its memory counters (searches, adds, store
    size, rejected duplicates) and, for the memory arm, MCQ and MUQ from every configured judge
    role (``judge``, ``judge_2``, ``judge_3``; at least ``judge`` is needed, otherwise MCQ and
    MUQ are unscored with that reason). Every value is also written to the trace store's
    ``scores`` table with the scorer and rubric versions and the judge model. Run-level metrics:
    MCQ, MUQ, ΔMDD, ΔTL, MS (within one run the normalised deltas are the neutral 0.5; compare
    models with ``livemace memory-report``) and mean counters.
    """
    from inspect_ai.scorer import Score, Target, scorer
    from inspect_ai.solver import TaskState

    from scorers.judges import JudgeRoleError, judge_models
    from scorers.outcomes import PERIODS_PER_YEAR, compute_outcomes
    from traces.records import ScoreRecord
    from traces.store import get_store

    @scorer(metrics=_metrics(), name="memory")
    def _memory() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            info = state.metadata.get("livemace")
            if not info:
                raise RuntimeError("no livemace trajectory recorded for this sample")
            run_id, account_id = info["run_id"], info["account_id"]
            arm = state.metadata.get("arm", MEMORY_ARM)
            store = get_store(info["trace_db"])
            with store.reader() as reader:
                equity = reader.equity_series(run_id, account_id, interval)
                entries = reader.memory_entries(run_id, account_id)
                events = reader.memory_events(run_id, account_id)
                fragments = reader.fragments(run_id, account_id)
            outcomes = compute_outcomes(equity, PERIODS_PER_YEAR[interval])
            adds = events[events["kind"] == "add"] if len(events) else events
            value: dict[str, float] = {
                "mdd": outcomes["mdd"], "tail_loss": outcomes["tail_loss"],
                "searches": float((events["kind"] == "search").sum()) if len(events) else 0.0,
                "adds": float(len(adds)),
                "store_size": float(len(entries)),
                "rejected_duplicates": float((adds["accepted"] == False).sum()) if len(adds) else 0.0,
                "mcq": float("nan"), "muq": float("nan"),
            }
            judged: dict[str, Any] = {}
            unscored: dict[str, str] = {}
            if arm == MEMORY_ARM:
                try:
                    judges = judge_models()
                except JudgeRoleError as exc:
                    judges, unscored["mcq"], unscored["muq"] = [], str(exc), str(exc)
                if judges:
                    content = [
                        {"id": r["entry_id"], "condition": r["condition"],
                         "observation": r["observation"], "rule": r["rule"]}
                        for r in entries.to_dict(orient="records")
                    ]
                    usage = [
                        {"id": r.get("tool_call_id") or f"fragment-{i}",
                         "market_context": compact_context(r["market_context"] or {}),
                         "search_reasoning": r["search_reasoning"] or "", "query": r["query"],
                         "results": r["results"], "subsequent": r["subsequent"]}
                        for i, r in enumerate(fragments.to_dict(orient="records"))
                    ]
                    judged["mcq"] = await score_memory_content(content, judges, content_sample, seed)
                    judged["muq"] = await score_memory_usage(usage, judges, usage_sample, seed)
                    for key, result in judged.items():
                        if result["value"] is None:
                            unscored[key] = result["reason"] or "no judge produced a value"
                        else:
                            value[key] = float(result["value"])
            rows = []
            for key, number in value.items():
                judged_result = judged.get(key)
                missing = math.isnan(number)
                rows.append(ScoreRecord(
                    run_id=run_id, account_id=account_id, scorer="memory", metric=key,
                    value=None if missing else number,
                    unscored_reason=(unscored.get(key) or "not applicable to the memory-free arm")
                    if missing else None,
                    scorer_version=SCORER_VERSION,
                    rubric_version=None if judged_result is None else judged_result["rubric_version"],
                    judge_model=None if judged_result is None else ",".join(
                        j["judge_model"] for j in judged_result["per_judge"].values()
                    ),
                    subject=arm,
                    details={} if judged_result is None else {"per_judge": judged_result["per_judge"],
                                                              "sample_ids": judged_result["sample_ids"]},
                ))
            store.write_scores(rows)
            return Score(
                value=value,
                metadata={"arm": arm, "unscored": unscored, "scorer_version": SCORER_VERSION,
                          "judged": judged},
            )

        return score

    return _memory()


# --------------------------------------------------------------------------------------------
# Comparing models across runs of the trace store
# --------------------------------------------------------------------------------------------


def memory_inputs_from_scores(scores: pd.DataFrame) -> MemoryInputs:
    """A run's :class:`MemoryInputs` from its ``scores`` rows (scorer ``memory``; latest row per
    account and metric; ``subject`` is the arm)."""
    rows = scores[scores["scorer"] == "memory"].drop_duplicates(
        subset=["account_id", "metric"], keep="last"
    )

    def one(arm: str, metric: str) -> float | None:
        values = rows[(rows["subject"] == arm) & (rows["metric"] == metric)]["value"].dropna()
        return float(values.mean()) if len(values) else None

    return MemoryInputs(
        mcq=one(MEMORY_ARM, "mcq"), muq=one(MEMORY_ARM, "muq"),
        mdd_memory=one(MEMORY_ARM, "mdd"), mdd_free=one(FREE_ARM, "mdd"),
        tail_loss_memory=one(MEMORY_ARM, "tail_loss"), tail_loss_free=one(FREE_ARM, "tail_loss"),
    )


def memory_report(reader: Any) -> dict[str, MemoryResult]:
    """MS of every model with a scored ``memory`` run (its latest one) in a trace store."""
    runs = reader.runs()
    if runs.empty:
        return {}
    runs = runs[runs["configuration"] == "memory"].sort_values("started_at")
    per_model: dict[str, MemoryInputs] = {}
    for run in runs.to_dict(orient="records"):
        scores = reader.scores(run["run_id"], scorer="memory")
        if len(scores):
            per_model[run["model"]] = memory_inputs_from_scores(scores)
    return memory_scores_across_models(per_model)
