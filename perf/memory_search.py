"""Latency and recall of ``memory_search`` at 1k, 10k and 100k stored entries.

Run from the repository root::

    HF_HUB_OFFLINE=1 python3 -m perf.memory_search            # full table (about 1-2 minutes)
    python3 -m perf.memory_search --sizes 1000,10000 --queries 50

Stored vectors are random unit vectors (the hardest case for a quantised index: no clusters, and
cosines bunched near zero) with creation times spread uniformly over the year before the query
time. For each store size the script reports

* search latency without query embedding (``MemoryStore.search_vector``; random query vectors),
* search latency with query embedding (``MemoryStore.search`` on a text; only for the dimension
  of the resolved embedder, whose model embeds the text),
* latency of ``MemoryStore.add`` (embedding + duplicate check + insert), same condition,
* recall@5 of the indexed search against exhaustive exact scoring of every entry,
* the one-off index build time, paid by the first search after the store grows past the
  exhaustive-search threshold.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from benchmark.mechanisms.memory import MemoryStore, resolve_embedder
from benchmark.mechanisms.memory.embedders import Embedder

ACCOUNT = "perf"
MARKET = "crypto"
NOW = pd.Timestamp("2025-06-01 00:00", tz="UTC")
HISTORY = pd.Timedelta(days=365)
SYMBOLS = ("BTC", "ETH", "SOL", "BNB", "XRP", "DOGE")
MOVES = ("fell", "rallied", "ranged", "broke out", "gapped down", "squeezed higher")
CONTEXTS = (
    "funding turned negative",
    "volume doubled",
    "RSI was above 70",
    "price sat below the 20-day average",
    "open interest dropped",
    "the dollar strengthened",
)


@dataclass(frozen=True)
class Row:
    dim: int
    entries: int
    index: str
    build_s: float
    search: tuple[float, float]
    search_embedded: tuple[float, float] | None
    add: tuple[float, float] | None
    recall_at_5: float


class VectorsOnly:
    """Placeholder embedder for stores filled with precomputed vectors of another dimension."""

    def __init__(self, dim: int) -> None:
        self.name = f"precomputed-{dim}d"
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("this benchmark store holds precomputed vectors only")


def random_units(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def situations(rng: np.random.Generator, n: int) -> list[str]:
    """Short market descriptions in the style an agent would query or store."""
    return [
        f"{rng.choice(SYMBOLS)} {rng.choice(MOVES)} {rng.integers(1, 15)}% in "
        f"{rng.integers(1, 24)}h while {rng.choice(CONTEXTS)} (case {i})"
        for i in range(n)
    ]


def filled_store(embedder: Embedder, size: int, rng: np.random.Generator) -> MemoryStore:
    store = MemoryStore(embedder)
    vectors = random_units(rng, size, embedder.dim)
    offsets = np.sort(rng.integers(0, HISTORY.value, size))
    start = NOW - HISTORY
    store.load(
        {
            "entry_id": f"p{i}",
            "account_id": ACCOUNT,
            "market": MARKET,
            "condition": f"synthetic condition {i}",
            "observation": "synthetic observation",
            "rule": "synthetic rule",
            "created_at": start + pd.Timedelta(int(offsets[i]), unit="ns"),
            "embedding": vectors[i],
        }
        for i in range(size)
    )
    return store


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ms = np.asarray(samples) * 1e3
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(embedder: Embedder, size: int, queries: int, embeds_text: bool, seed: int) -> Row:
    rng = np.random.default_rng(seed + size + embedder.dim)
    store = filled_store(embedder, size, rng)
    probes = random_units(rng, queries, embedder.dim)
    build = timed(partial(store.search_vector, ACCOUNT, MARKET, probes[0], NOW, k=5))
    search = [timed(partial(store.search_vector, ACCOUNT, MARKET, q, NOW, k=5)) for q in probes]
    recalls = []
    for q in probes:
        approx = {h.entry.entry_id for h in store.search_vector(ACCOUNT, MARKET, q, NOW, k=5)}
        exact = store.search_vector(ACCOUNT, MARKET, q, NOW, k=5, exact=True)
        recalls.append(len(approx & {h.entry.entry_id for h in exact}) / len(exact))
    embedded = added = None
    if embeds_text:
        texts = situations(rng, queries)
        embedded = percentiles(
            [timed(partial(store.search, ACCOUNT, MARKET, t, NOW, k=5)) for t in texts]
        )
        added = percentiles(
            [
                timed(partial(store.add, ACCOUNT, MARKET, t, "observed move", "rule", NOW, 0))
                for t in situations(rng, min(queries, 50))
            ]
        )
    return Row(
        dim=embedder.dim,
        entries=size,
        index="quantised" if store.uses_quantised_index(ACCOUNT, MARKET) else "exhaustive",
        build_s=build,
        search=percentiles(search),
        search_embedded=embedded,
        add=added,
        recall_at_5=float(np.mean(recalls)),
    )


def render(rows: list[Row]) -> str:
    def pair(value: tuple[float, float] | None) -> str:
        return "—" if value is None else f"{value[0]:7.2f} / {value[1]:7.2f}"

    header = (
        f"{'dim':>4} {'entries':>8} {'index':>10} {'build s':>8} "
        f"{'search ms p50/p95':>19} {'+embed ms p50/p95':>19} {'add ms p50/p95':>19} "
        f"{'recall@5':>8}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r.dim:>4} {r.entries:>8} {r.index:>10} {r.build_s:>8.2f} "
            f"{pair(r.search):>19} {pair(r.search_embedded):>19} {pair(r.add):>19} "
            f"{r.recall_at_5:>8.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="auto", help="preference for resolve_embedder")
    parser.add_argument(
        "--extra-dims", default="768", help="vector-only dimensions besides the embedder's"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    embedder = resolve_embedder(args.embedder)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    extra = [int(d) for d in args.extra_dims.split(",") if d and int(d) != embedder.dim]
    print(f"embedder: {embedder.name} ({embedder.dim}-d)")
    print(
        f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}  queries per cell: "
        f"{args.queries}  k=5  ages uniform over {HISTORY.days} days"
    )
    rows = [measure(embedder, n, args.queries, True, args.seed) for n in sizes]
    for dim in extra:
        rows += [measure(VectorsOnly(dim), n, args.queries, False, args.seed) for n in sizes]
    print(render(rows))
    print(f"total runtime {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
