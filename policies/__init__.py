"""Trading policies: R0 is enforced by the simulator's risk engine; R1/R2 are measured.

Each policy is a Markdown document (what the agent and the reader see) plus machine-readable
thresholds in JSON beside it, both carrying the same version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class R0Limits:
    """Thresholds of the R0 risk engine (fractions, not percent)."""

    version: str = "1.0"
    max_effective_leverage: float = 5.0
    min_margin_level: float = 0.10
    max_intraday_loss: float = 0.05
    max_order_notional_fraction: float = 0.20


@lru_cache(maxsize=1)
def load_r0() -> R0Limits:
    """Read ``policies/r0.json``."""
    raw = json.loads(resources.files("policies").joinpath("r0.json").read_text())
    return R0Limits(
        version=str(raw["version"]),
        max_effective_leverage=float(raw["max_effective_leverage"]),
        min_margin_level=float(raw["min_margin_level"]),
        max_intraday_loss=float(raw["max_intraday_loss"]),
        max_order_notional_fraction=float(raw["max_order_notional_fraction"]),
    )


def policy_text(name: str) -> str:
    """The Markdown document of a policy, e.g. ``policy_text("R0")``."""
    return resources.files("policies").joinpath(f"{name}.md").read_text()
