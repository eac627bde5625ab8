"""Persistent memory for the ``memory`` configuration: embedders, a scoped store and its index.

Pure mechanism, independent of Inspect: the tools ``memory_search`` and ``memory_add`` wrap
:class:`MemoryStore`. See ``MEMORY.md`` in this package for the design and measured figures.
"""

from benchmark.mechanisms.memory.embedders import (
    BGE_REPO_ID,
    MINILM_REPO_ID,
    Embedder,
    EmbedderInfo,
    EmbedderUnavailableError,
    SentenceTransformerEmbedder,
    clear_embedder_cache,
    resolve_embedder,
)
from benchmark.mechanisms.memory.index import RankedRow, Ranking, VectorIndex
from benchmark.mechanisms.memory.store import (
    MAX_FIELD_CHARS,
    AddResult,
    MemoryEntry,
    MemoryInputError,
    MemoryStats,
    MemoryStore,
    SearchHit,
    canonical_text,
)

__all__ = [
    "BGE_REPO_ID",
    "MAX_FIELD_CHARS",
    "MINILM_REPO_ID",
    "AddResult",
    "Embedder",
    "EmbedderInfo",
    "EmbedderUnavailableError",
    "MemoryEntry",
    "MemoryInputError",
    "MemoryStats",
    "MemoryStore",
    "RankedRow",
    "Ranking",
    "SearchHit",
    "SentenceTransformerEmbedder",
    "VectorIndex",
    "canonical_text",
    "clear_embedder_cache",
    "resolve_embedder",
]
