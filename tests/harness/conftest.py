"""Fixtures of the harness tests: no tokenizer, no writes into the repository, a test market."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken

from tests.harness.helpers import TOKENIZER_CALLS, refuse_tokenizer, write_market
from traces.store import close_all_stores


@pytest.fixture(scope="session", autouse=True)
def no_tokenizer() -> Iterator[None]:
    """Make every tiktoken vocabulary lookup fail loudly (there is no network here)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("get_encoding", "encoding_for_model"):
            patch.setattr(tiktoken, name, refuse_tokenizer(name))
        yield
    close_all_stores()


@pytest.fixture(autouse=True)
def tokenizer_never_used() -> Iterator[None]:
    """Fail the test if Inspect reached the tokenizer (even if it swallowed the error)."""
    yield
    assert TOKENIZER_CALLS == [], f"tokenizer calls: {TOKENIZER_CALLS}"


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Workspaces and the default trace store live under the test's temporary directory."""
    monkeypatch.setenv("LIVEMACE_WORKSPACES", str(tmp_path / "workspaces"))
    monkeypatch.setenv("LIVEMACE_TRACE_DB", str(tmp_path / "default.duckdb"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def market_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random test market written once as a Parquet file."""
    return write_market(tmp_path_factory.mktemp("market") / "market.parquet")
