"""Prompts as versioned documents: Markdown with a small front matter, rendered with jinja2."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import Any

import jinja2

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


@dataclass(frozen=True)
class Prompt:
    """A prompt document. With ``extends``, the parent is rendered first and this one appended."""

    name: str
    version: str
    template: str
    extends: str | None = None

    @cached_property
    def compiled(self) -> jinja2.Template:
        return _ENV.from_string(self.template)

    def render(self, **values: Any) -> str:
        own = self.compiled.render(**values).strip()
        if self.extends is None:
            return own
        return load_prompt(self.extends).render(**values) + "\n\n" + own

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"


@cache
def load_prompt(name: str) -> Prompt:
    """Read ``prompts/NAME.md``: front matter ``prompt`` and ``version``, then the template."""
    text = resources.files(__package__).joinpath(f"{name}.md").read_text()
    if not text.startswith("---\n"):
        raise ValueError(f"prompt {name} has no front matter")
    head, body = text[4:].split("\n---\n", 1)
    meta = dict(line.split(":", 1) for line in head.strip().splitlines())
    meta = {k.strip(): v.strip() for k, v in meta.items()}
    return Prompt(
        name=meta.get("prompt", name), version=meta["version"], template=body,
        extends=meta.get("extends"),
    )
