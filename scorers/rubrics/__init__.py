"""Judge rubric documents (``*.md`` with a ``version`` header), read by ``scorers.judges``."""
