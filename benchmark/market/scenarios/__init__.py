"""The bundled offline market: named, pre-generated scenarios shipped as data files.

Each scenario ``NAME`` is three files in ``data/``: ``NAME.parquet`` (15-minute OHLCV bars for
the default universe, long format), ``NAME.news.jsonl`` (a time-stamped synthetic news corpus)
and ``NAME.meta.json`` (window, seed, regime timeline and measured calibration statistics).
Loading never regenerates anything, so replays are bit-identical on every machine; the files
are rebuilt with ``python -m benchmark.market.scenarios.generator`` (see ``SCENARIOS.md``).

The frames returned by :func:`load_scenario` are cached and shared: treat them as read-only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.market.clock import as_utc
from benchmark.market.data import NewsItem, NewsMarket

SCENARIO_NAMES: tuple[str, ...] = ("default", "bull", "bear", "chop", "flash-crash")
"""Names of the shipped scenarios, ``default`` first."""

BAR_COLUMNS: tuple[str, ...] = ("symbol", "ts", "open", "high", "low", "close", "volume")
"""Columns of a scenario's bar frame, in order; ``ts`` is the bar's open time (UTC)."""


_SUFFIXES = {"bars": ".parquet", "news": ".news.jsonl", "meta": ".meta.json"}


@dataclass(frozen=True, eq=False)
class Scenario:
    """A market window: bars, news corpus and metadata (see ``SCENARIOS.md``)."""

    name: str
    bars: pd.DataFrame
    news: tuple[NewsItem, ...]
    meta: dict[str, Any]

    @property
    def start(self) -> pd.Timestamp:
        """First decision time (UTC, midnight)."""
        return as_utc(self.meta["start"])

    @property
    def end(self) -> pd.Timestamp:
        """End of the window (exclusive, UTC)."""
        return as_utc(self.meta["end"])

    @property
    def history_start(self) -> pd.Timestamp:
        """Time of the first bar, 14 days before :attr:`start`."""
        return as_utc(self.meta["history_start"])

    @property
    def symbols(self) -> tuple[str, ...]:
        """Symbols present in the bars, sorted."""
        return tuple(sorted(self.bars["symbol"].unique()))


def list_scenarios() -> list[str]:
    """Names of the shipped scenarios."""
    return list(SCENARIO_NAMES)


def scenario_dir() -> Path:
    """Directory that holds the shipped scenario files."""
    return Path(str(resources.files(__name__) / "data"))


def check_name(name: str) -> str:
    """Return ``name`` if it is a shipped scenario; otherwise raise ``ValueError`` listing them."""
    if name not in SCENARIO_NAMES:
        raise ValueError(f"unknown scenario {name!r}; valid scenarios: {', '.join(SCENARIO_NAMES)}")
    return name


def read_bars(path: Path) -> pd.DataFrame:
    """Read a bar file and normalise its dtypes (``ts`` as ``datetime64[ns, UTC]``)."""
    frame = pd.read_parquet(path)
    frame["ts"] = frame["ts"].astype("datetime64[ns, UTC]")
    return frame[list(BAR_COLUMNS)]


def read_news(path: Path) -> tuple[NewsItem, ...]:
    """Read a ``.news.jsonl`` corpus."""
    with path.open(encoding="utf-8") as handle:
        return tuple(NewsItem.from_json(json.loads(line)) for line in handle if line.strip())


def read_scenario(directory: Path, name: str) -> Scenario:
    """Read scenario ``name`` from the three files in ``directory``."""
    paths = {kind: directory / f"{name}{suffix}" for kind, suffix in _SUFFIXES.items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"scenario {name!r} is incomplete (missing {', '.join(missing)}); rebuild it with "
            f"`python -m benchmark.market.scenarios.generator --scenario {name}`"
        )
    meta = json.loads(paths["meta"].read_text(encoding="utf-8"))
    return Scenario(name, read_bars(paths["bars"]), read_news(paths["news"]), meta)


@cache
def load_scenario(name: str) -> Scenario:
    """Load a shipped scenario by name (cached; the returned frames are shared, do not mutate)."""
    check_name(name)
    with resources.as_file(resources.files(__name__) / "data") as directory:
        return read_scenario(Path(directory), name)


__all__ = [
    "BAR_COLUMNS",
    "SCENARIO_NAMES",
    "NewsItem",
    "NewsMarket",
    "Scenario",
    "list_scenarios",
    "load_scenario",
    "read_scenario",
    "scenario_dir",
]
