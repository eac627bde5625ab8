"""Value conversions shared by records, writer and reader.

Timestamps are normalised to timezone-aware UTC ``pandas.Timestamp`` values at microsecond
resolution (DuckDB's ``TIMESTAMPTZ`` keeps microseconds). JSON values are encoded with sorted
keys; non-finite floats become ``null`` because JSON has no NaN or infinity.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd


def to_utc(value: object, field: str) -> pd.Timestamp:
    """Return ``value`` as a UTC ``pandas.Timestamp``; naive or unparsable values are an error.

    A naive time is refused rather than guessed: the store mixes simulated and wall-clock
    times, and a silent assumption about the zone would corrupt both.
    """
    if value is None:
        raise ValueError(f"{field}: a timestamp is required, got None")
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field}: not a timestamp: {value!r}") from exc
    if ts is pd.NaT:
        raise ValueError(f"{field}: not a timestamp: {value!r}")
    if ts.tzinfo is None:
        raise ValueError(f"{field}: timestamp {value!r} has no time zone; pass a UTC-aware time")
    return ts.tz_convert("UTC").floor("us")


def to_utc_or_none(value: object, field: str) -> pd.Timestamp | None:
    """Like :func:`to_utc` but lets ``None`` through."""
    return None if value is None else to_utc(value, field)


def utc_now() -> pd.Timestamp:
    """The current wall-clock time in UTC, at microsecond resolution."""
    return pd.Timestamp.now(tz="UTC").floor("us")


def _plain(value: Any) -> Any:
    """Turn ``value`` into plain JSON types (recursively)."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (pd.Timestamp, dt.datetime, dt.date)):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _plain(value.tolist())
    raise TypeError(f"value of type {type(value).__name__} cannot be stored as JSON: {value!r}")


def to_json(value: Any, field: str) -> str | None:
    """Encode ``value`` as JSON text (``None`` stays SQL NULL)."""
    if value is None:
        return None
    try:
        return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False)
    except TypeError as exc:
        raise TypeError(f"{field}: {exc}") from exc


def from_json(text: object) -> Any:
    """Decode JSON text read from the database (SQL NULL and pandas NA become ``None``)."""
    if text is None or text is pd.NA or (isinstance(text, float) and math.isnan(text)):
        return None
    return json.loads(str(text))


def require(condition: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(message)


def finite_or_none(value: float | None, field: str) -> float | None:
    """Check that an optional number is finite and return it as a float."""
    if value is None:
        return None
    number = float(value)
    require(math.isfinite(number), f"{field} must be finite, got {value!r}")
    return number
