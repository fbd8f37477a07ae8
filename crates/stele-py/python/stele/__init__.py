"""Stele: JSON documents you read without parsing, and sorted tables bigger than memory.

- ``Document``: one JSON value stored as a compact binary block; ``doc["a"]["b"]`` reads in
  place (nested objects and arrays come back as lazy ``Object`` / ``Array`` views).
- ``Table``: an immutable sorted mapping of bytes to bytes in a file, built from pairs in any
  order with a memory budget and read through mmap.

Errors derive from ``SteleError``; see ``stele._errors``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import CorruptError, FormatError, InUseError, InvalidInput, SteleError
from ._stele import (
    Array,
    ArrayIterator,
    Document,
    Object,
    Table,
    View,
    TableIterator,
    document_to_json,
    dumps,
    json_to_document,
    loads,
)

# Views behave as read-only mappings and sequences; register them so isinstance() agrees.
Mapping.register(Object)
Sequence.register(Array)
Mapping.register(Table)

__all__ = [
    "Array",
    "ArrayIterator",
    "CorruptError",
    "Document",
    "FormatError",
    "InUseError",
    "InvalidInput",
    "Object",
    "SteleError",
    "Table",
    "TableIterator",
    "View",
    "document_to_json",
    "dumps",
    "json_to_document",
    "loads",
]
