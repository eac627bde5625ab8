"""Exceptions raised by the trace store.

Every error the store raises on purpose derives from :class:`TraceStoreError`, so callers can
catch the whole family at once; the subclasses also derive from the matching built-in
(``LookupError``, ``ValueError``) so ordinary ``except`` clauses keep working.
"""

from __future__ import annotations


class TraceStoreError(Exception):
    """Base class of the errors raised by ``traces``."""


class UnknownRecordError(TraceStoreError, LookupError):
    """A run or account that a write refers to does not exist in the store."""

    def __str__(self) -> str:  # LookupError would otherwise quote the message like a key
        return str(self.args[0]) if self.args else ""


class TraceConflictError(TraceStoreError, ValueError):
    """A write contradicts what the store already holds (duplicate key, wrong status, gap)."""


class SchemaVersionError(TraceStoreError):
    """The database file was written with a schema version this code does not read."""


class StoreInUseError(TraceStoreError):
    """The database file is already open in a way that prevents this connection."""
