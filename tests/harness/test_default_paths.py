"""Default output paths land in the directory the user ran the command from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_default_trace_store_and_workspaces_are_in_the_invocation_directory(tmp_path):
    task_file = os.path.relpath(REPO / "benchmark" / "base.py", tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("LIVEMACE_TRACE_DB", "LIVEMACE_WORKSPACES")}
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", task_file, "--model", "baseline/grid",
         "-T", "days=0.25", "--log-dir", "logs", "--display", "none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "livemace_traces.duckdb").exists()
    assert (tmp_path / "workspaces").is_dir()
    assert not list((REPO / "benchmark").glob("*.duckdb"))
