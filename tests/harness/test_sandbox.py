"""Tests of the per-account workspace sandbox (benchmark/harness/sandbox.py).

Escape attempts covered: path traversal (``..``, absolute paths, symbolic links),
network access, reading the harness's secrets (environment variables and another
process's ``/proc/<pid>/environ``), runaway and detached processes, memory and file-size
exhaustion. Tests whose outcome depends on whether this host permits Linux namespaces
check the isolated behaviour when it is available and the honest reporting of its
absence otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from benchmark.harness.sandbox import (
    ExecResult,
    Workspace,
    WorkspaceError,
    detect_isolation,
    sandbox_environment,
    truncate_text,
)

T = TypeVar("T")

NAMESPACES = detect_isolation()
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Drive one coroutine to completion (no async pytest plugin is installed)."""
    return asyncio.run(coro)


def unique_sleep_seconds(tag: int) -> str:
    """A sleep duration unlikely to match any other process's arguments."""
    return f"{700 + os.getpid() % 250}.{tag:03d}"


def live_pids_with_arg(arg: str) -> list[int]:
    """Host pids of running processes with ``arg`` in their argument vector.

    Zombies have an empty command line, so processes that were killed but not yet reaped
    do not count as running.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv:
            found.append(int(entry.name))
    return found


def is_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie awaiting its parent."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def wait_until(condition: Callable[[], bool], timeout_s: float = 2.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout_s`` passes; return its last value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws", time_limit_s=5.0)


# ----------------------------------------------------------------------------- files


def test_write_then_read_round_trip(ws: Workspace) -> None:
    written = ws.write_file("notes/plan.md", "héllo\nwörld")
    assert written == 13  # 11 characters, two of them two bytes long in UTF-8
    assert ws.read_file("notes/plan.md") == "héllo\nwörld"
    assert (ws.root / "notes" / "plan.md").read_bytes() == "héllo\nwörld".encode()


def test_root_is_created_and_absolute_paths_inside_it_work(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "a" / "b")
    assert workspace.root == (tmp_path / "a" / "b").resolve()
    assert workspace.root.is_dir()
    workspace.write_file(workspace.root / "x.txt", "1")
    assert workspace.read_file(str(workspace.root / "x.txt")) == "1"
    assert workspace.read_file("sub/../x.txt") == "1"


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "notes/../../x", "..", "/", "/tmp/x"])
def test_paths_leaving_the_workspace_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.read_file(path)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.write_file(path, "pwned")
    assert not (ws.root.parent / "x").exists()


def test_symbolic_links_leading_outside_are_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("do not read")
    (ws.root / "dir_link").symlink_to(outside)
    (ws.root / "file_link").symlink_to(secret)
    (ws.root / "dangling_link").symlink_to(outside / "new.txt")

    for path in ("dir_link/secret.txt", "file_link"):
        with pytest.raises(WorkspaceError, match="symbolic link"):
            ws.read_file(path)
        with pytest.raises(WorkspaceError, match="symbolic link"):
            ws.write_file(path, "overwritten")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.write_file("dangling_link", "created")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.write_file("dir_link/new_dir/file.txt", "created")

    assert secret.read_text() == "do not read"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symbolic_links_inside_the_workspace_are_followed(ws: Workspace) -> None:
    ws.write_file("real.txt", "content")
    (ws.root / "alias.txt").symlink_to(ws.root / "real.txt")
    assert ws.read_file("alias.txt") == "content"


def test_read_errors_tell_the_model_what_to_do(ws: Workspace) -> None:
    (ws.root / "folder").mkdir()
    (ws.root / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(WorkspaceError, match="No file 'missing.txt'.*write_file"):
        ws.read_file("missing.txt")
    with pytest.raises(WorkspaceError, match="'folder' is a directory"):
        ws.read_file("folder")
    with pytest.raises(WorkspaceError, match="binary file.*run_python_script"):
        ws.read_file("blob.bin")
    with pytest.raises(WorkspaceError, match="Empty path"):
        ws.read_file("  ")
    with pytest.raises(WorkspaceError, match="NUL"):
        ws.read_file("a\0b")


def test_write_size_limit_and_directory_target(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", max_file_bytes=10)
    assert workspace.write_file("ok.txt", "x" * 10) == 10
    with pytest.raises(WorkspaceError, match="11 bytes; the limit per file is 10"):
        workspace.write_file("big.txt", "x" * 11)
    assert not (workspace.root / "big.txt").exists()
    (workspace.root / "folder").mkdir()
    with pytest.raises(WorkspaceError, match="is a directory"):
        workspace.write_file("folder", "x")
    with pytest.raises(WorkspaceError, match="a file stands where a directory is needed"):
        workspace.write_file("ok.txt/child.txt", "x")


def test_read_file_decodes_characters_split_across_chunks(ws: Workspace) -> None:
    # 1 + 2 * 40_000 bytes: the 64 KiB read boundary falls inside a two-byte character.
    content = "a" + "é" * 40_000
    ws.write_file("wide.txt", content)
    assert Workspace(ws.root, max_output_chars=100_000).read_file("wide.txt") == content


def test_read_file_truncates_long_files(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", max_output_chars=10)
    workspace.write_file("long.txt", "abcdefghijklmnopqrstuvwxyz")
    assert workspace.read_file("long.txt") == "abcde\n[truncated 16 chars]\nvwxyz"


def test_for_account_makes_one_safe_directory(tmp_path: Path) -> None:
    workspace = Workspace.for_account(tmp_path, "openai/gpt-5.4:memory")
    assert workspace.root == (tmp_path / "openai_gpt-5.4_memory").resolve()
    with pytest.raises(ValueError, match="no usable directory name"):
        Workspace.for_account(tmp_path, "..")


def test_constructor_validates_its_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="time_limit_s"):
        Workspace(tmp_path, time_limit_s=0)
    with pytest.raises(ValueError, match="memory_limit_mb"):
        Workspace(tmp_path, memory_limit_mb=0)
    with pytest.raises(ValueError, match="isolation must be"):
        Workspace(tmp_path, isolation="bogus")  # type: ignore[arg-type]


# ------------------------------------------------------------------------ truncation


def test_truncate_text_keeps_head_and_tail() -> None:
    assert truncate_text("abcdefghij", 4) == "ab\n[truncated 6 chars]\nij"
    assert truncate_text("abcdefghij", 5) == "ab\n[truncated 5 chars]\nhij"
    assert truncate_text("abc", 3) == "abc"
    assert truncate_text("abc", 0) == "\n[truncated 3 chars]\n"
    with pytest.raises(ValueError):
        truncate_text("abc", -1)


def test_command_output_is_truncated_with_a_note(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", max_output_chars=100)
    script = "import sys\nsys.stdout.write(''.join(str(i % 10) for i in range(1000)))\n"
    result = run(workspace.run_python(script))
    assert result.exit_code == 0
    assert result.stdout == "0123456789" * 5 + "\n[truncated 900 chars]\n" + "0123456789" * 5


# ------------------------------------------------------------------------- execution


def test_shell_result_fields_and_text(ws: Workspace) -> None:
    result = run(ws.run_shell("echo out; echo err >&2; exit 3"))
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.timed_out and result.killed_reason is None and not result.ok
    text = result.to_text()
    assert text.startswith("exit code: 3 (")
    assert text.endswith("--- stdout ---\nout\n--- stderr ---\nerr")
    assert run(ws.run_shell("true")).to_text().endswith("(no output)")


def test_commands_run_in_the_workspace(ws: Workspace) -> None:
    ws.write_file("data/input.txt", "42")
    result = run(ws.run_shell("pwd; cat data/input.txt; echo made > out.txt"))
    assert result.stdout == f"{ws.root}\n42"
    assert ws.read_file("out.txt") == "made\n"


def test_shell_pipelines_behave_normally(ws: Workspace) -> None:
    # `yes` must die quietly of SIGPIPE, which the launcher restores to its default.
    result = run(ws.run_shell("yes | head -n 2"))
    assert (result.stdout, result.stderr, result.exit_code) == ("y\ny\n", "", 0)


def test_overlong_shell_command_is_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="write it to a script"):
        run(ws.run_shell("echo " + "x" * 100_001))


def test_scripts_can_use_pandas_and_their_own_modules(ws: Workspace) -> None:
    ws.write_file("prices.csv", "close\n1\n2\n3\n4\n")
    ws.write_file("helpers.py", "def double(x):\n    return 2 * x\n")
    script = (
        "import numpy as np, pandas as pd\n"
        "from helpers import double\n"
        "closes = pd.read_csv('prices.csv')['close']\n"
        "print(closes.mean(), double(int(np.sum(closes))))\n"
    )
    result = run(ws.run_python(script))
    assert (result.stdout, result.stderr, result.exit_code) == ("2.5 20\n", "", 0)


def test_python_traceback_is_returned(ws: Workspace) -> None:
    result = run(ws.run_python("x = 1\nraise RuntimeError('boom')\n"))
    assert result.exit_code == 1
    assert 'File "<stdin>", line 2' in result.stderr
    assert result.stderr.rstrip().endswith("RuntimeError: boom")


def test_commands_run_concurrently(ws: Workspace) -> None:
    async def two() -> list[ExecResult]:
        return await asyncio.gather(
            ws.run_shell("sleep 1; echo a"), ws.run_shell("sleep 1; echo b")
        )

    started = time.monotonic()
    first, second = run(two())
    assert (first.stdout, second.stdout) == ("a\n", "b\n")
    assert time.monotonic() - started < 1.8  # one after the other would take >= 2 s


# --------------------------------------------------------------------------- secrets


def test_secrets_in_the_parent_environment_are_invisible(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("ALPACA_API_SECRET", "alpaca-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")

    shell = run(ws.run_shell("env"))
    names = {line.split("=", 1)[0] for line in shell.stdout.splitlines()}
    assert names == set(sandbox_environment(ws.root)) | {"PWD", "SHLVL", "_"}
    for leaked in ("sk-test-secret", "alpaca-secret", "ghp-secret", "hunter2"):
        assert leaked not in shell.stdout
    assert not any(part in name for name in names for part in SECRET_NAME_PARTS)

    python = run(ws.run_python("import json, os\nprint(json.dumps(dict(os.environ)))\n"))
    environment = json.loads(python.stdout)
    assert environment == sandbox_environment(ws.root)
    assert environment["HOME"] == str(ws.root)
    assert environment["TMPDIR"] == str(ws.root / ".tmp")
    assert (ws.root / ".tmp").is_dir()


def test_other_processes_environments_are_not_readable(ws: Workspace) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-proc-secret"},
    )
    script = (
        "import os\n"
        "found = []\n"
        "for name in os.listdir('/proc'):\n"
        "    try:\n"
        "        with open(f'/proc/{name}/environ', 'rb') as handle:\n"
        "            if b'sk-proc-secret' in handle.read():\n"
        "                found.append(name)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('found', found)\n"
    )
    try:
        assert wait_until(lambda: Path(f"/proc/{holder.pid}/environ").exists())
        result = run(ws.run_python(script))
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 0
    if ws.process_isolated:
        assert result.stdout == "found []\n"
    else:
        # Without a PID namespace a same-user process is readable: the limitation the
        # private /proc exists to close, and which the workspace reports.
        assert "PID namespace" not in ws.isolation.describe()


# --------------------------------------------------------------------------- network


NETWORK_PROBE = """\
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    print("connected")
except OSError as error:
    print("failed", error.errno)
"""


@pytest.fixture
def listening_port() -> Any:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_network_is_unreachable_when_isolated(ws: Workspace, listening_port: int) -> None:
    result = run(ws.run_python(NETWORK_PROBE.format(port=listening_port)))
    assert result.network_isolated == ws.network_isolated == NAMESPACES.network
    if ws.network_isolated:
        assert result.stdout.startswith("failed")
        assert "note: network isolation" not in result.to_text()
    else:
        assert "network isolation is unavailable" in result.to_text()


def test_without_isolation_the_same_probe_connects_and_is_reported(
    tmp_path: Path, listening_port: int
) -> None:
    workspace = Workspace(tmp_path / "ws", isolation="none")
    result = run(workspace.run_python(NETWORK_PROBE.format(port=listening_port)))
    assert result.stdout == "connected\n"
    assert result.network_isolated is False
    assert "note: network isolation is unavailable on this host" in result.to_text()


# ------------------------------------------------------------------ runaway processes


def test_busy_loop_is_killed_at_the_wall_time_limit(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", time_limit_s=1.0)
    result = run(workspace.run_python("print('start', flush=True)\nwhile True:\n    pass\n"))
    assert result.timed_out and not result.ok
    assert result.exit_code == -signal.SIGKILL
    assert 1.0 <= result.duration_s < 2.0
    assert result.stdout == "start\n"
    assert "wall-time limit of 1 s exceeded" in (result.killed_reason or "")


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_background_children_are_killed_on_timeout(tmp_path: Path, isolation: str) -> None:
    workspace = Workspace(tmp_path / "ws", time_limit_s=1.0, isolation=isolation)  # type: ignore[arg-type]
    seconds = unique_sleep_seconds(1 if isolation == "auto" else 2)
    assert live_pids_with_arg(seconds) == []
    result = run(workspace.run_shell(f"sleep {seconds} & echo $!; sleep {seconds}"))
    assert result.timed_out
    assert result.duration_s < 2.0
    assert wait_until(lambda: live_pids_with_arg(seconds) == [])
    if not workspace.process_isolated:
        # Outside a PID namespace `$!` is a host pid we can check directly.
        assert not is_alive(int(result.stdout))


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_leftover_children_die_when_the_command_returns(tmp_path: Path, isolation: str) -> None:
    workspace = Workspace(tmp_path / "ws", time_limit_s=5.0, isolation=isolation)  # type: ignore[arg-type]
    seconds = unique_sleep_seconds(3 if isolation == "auto" else 4)
    result = run(workspace.run_shell(f"sleep {seconds} & echo started"))
    assert (result.stdout, result.exit_code, result.timed_out) == ("started\n", 0, False)
    assert result.duration_s < 1.0
    assert wait_until(lambda: live_pids_with_arg(seconds) == [])


def test_detached_children_die_with_the_pid_namespace(ws: Workspace) -> None:
    seconds = unique_sleep_seconds(5)
    try:
        result = run(ws.run_shell(f"setsid sleep {seconds} & sleep 0.2; echo started"))
        assert result.stdout == "started\n"
        if ws.process_isolated:
            assert wait_until(lambda: live_pids_with_arg(seconds) == [])
        else:
            # A new session escapes the process-group kill; only a PID namespace stops it.
            assert live_pids_with_arg(seconds) != []
    finally:
        for pid in live_pids_with_arg(seconds):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------- resource limits


def test_memory_limit_stops_large_allocations(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", memory_limit_mb=256)
    small = run(workspace.run_python("block = bytearray(64 * 1024 * 1024)\nprint(len(block))\n"))
    assert small.stdout == "67108864\n"
    large = run(workspace.run_python("block = bytearray(2 * 1024 ** 3)\nprint('allocated')\n"))
    assert large.exit_code == 1
    assert "allocated" not in large.stdout
    assert large.stderr.rstrip().endswith("MemoryError")
    assert "note: memory is limited to 256 MB per process" in large.to_text()


def test_file_size_limit_applies_to_scripts(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", max_file_bytes=100_000)
    script = "with open('big.bin', 'wb') as handle:\n    handle.write(b'x' * 200_000)\n"
    result = run(workspace.run_python(script))
    assert result.exit_code == 1
    assert "File too large" in result.stderr
    assert (workspace.root / "big.bin").stat().st_size <= 100_000
    assert "files are limited to 100000 bytes" in result.to_text()
