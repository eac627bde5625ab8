"""Workspace tools: Python, files and shell, confined to the account's sandbox."""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolError, tool

from benchmark.harness.sandbox import WorkspaceError
from benchmark.harness.session import AccountSession, truncate


@tool
def run_python_script(session: AccountSession) -> Tool:
    async def execute(script_content: str) -> str:
        """Run a Python script in your workspace (pandas and numpy available; no network; time and memory limited).

        Args:
            script_content: The Python source to run; print what you want to see.
        """
        try:
            return (await session.workspace.run_python(script_content)).to_text()
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from exc

    return execute


@tool
def execute_shell_command(session: AccountSession) -> Tool:
    async def execute(command: str) -> str:
        """Run a shell command in your workspace (no network; time and memory limited).

        Args:
            command: The bash command line.
        """
        try:
            return (await session.workspace.run_shell(command)).to_text()
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from exc

    return execute


@tool
def read_file(session: AccountSession) -> Tool:
    async def execute(path: str) -> str:
        """Read a text file from your workspace (long files are truncated).

        Args:
            path: Path relative to the workspace.
        """
        try:
            return truncate(session.workspace.read_file(path))
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from exc

    return execute


@tool
def write_file(session: AccountSession) -> Tool:
    async def execute(path: str, content: str) -> str:
        """Write a text file in your workspace; missing folders are created.

        Args:
            path: Path relative to the workspace.
            content: The full text to write.
        """
        try:
            written = session.workspace.write_file(path, content)
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from exc
        return f"wrote {written} bytes to {path}"

    return execute
