"""Exceptions raised by stele. Every message is the text of the Rust error it comes from."""

from __future__ import annotations


class SteleError(Exception):
    """Base class of every error stele raises (except KeyError, IndexError, TypeError, OSError)."""


class CorruptError(SteleError):
    """Bytes or a file are damaged: a document fails validation, a table checksum mismatches."""


class FormatError(SteleError):
    """A file is not what it was opened as: not a table, an unsupported format version, a list."""


class InvalidInput(SteleError, ValueError):
    """Input or arguments are refused: malformed JSON, a duplicate key, a bad path or option.

    For malformed JSON, ``line``, ``column`` (1-based) and ``offset`` (bytes) say where; for
    a filter, sort, projection or pipeline that is not acceptable, ``at`` is the place in it
    (``$.price.$gte``, ``$.$or[1]``).
    """

    line: int | None = None
    column: int | None = None
    offset: int | None = None
    at: str | None = None


class QueryTimeout(SteleError, TimeoutError):
    """A query ran past its ``time_budget`` and was stopped; nothing it found is returned."""


class InUseError(SteleError):
    """A database folder is open elsewhere (another process, or another ``stele.open`` here).

    ``pid`` is the process holding it (0 if unknown), ``path`` the folder.
    """

    pid: int | None = None
    path: str | None = None


__all__ = [
    "SteleError",
    "CorruptError",
    "FormatError",
    "InvalidInput",
    "InUseError",
    "QueryTimeout",
]
