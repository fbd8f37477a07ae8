"""Stele: JSON documents you read without parsing, a document database, sorted tables.

- ``Document``: one JSON value stored as a compact binary block; ``doc["a"]["b"]`` reads in
  place (nested objects and arrays come back as lazy ``Object`` / ``Array`` views).
- ``Table``: an immutable sorted mapping of bytes to bytes in a file, built from pairs in any
  order with a memory budget and read through mmap.
- ``open(path)`` / ``Database``: a folder of collections of documents by id, with atomic
  durable batches, snapshots, indexes and queries; ``db["books"]`` is a ``Collection``.
- ``DurableMap``: a sorted map of bytes on a stack of tables, with saves, compaction and roots.

Errors derive from ``SteleError``; see ``stele._errors``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ._errors import CorruptError, FormatError, InUseError, InvalidInput, SteleError
from ._stele import (
    Array,
    ArrayIterator,
    Batch,
    Collection,
    CollectionIterator,
    Database,
    Document,
    DurableMap,
    Object,
    QueryResult,
    Snapshot,
    Table,
    View,
    TableIterator,
    document_to_json,
    dumps,
    json_to_document,
    loads,
)


def open(
    path: str | os.PathLike[str],
    *,
    decimals: str = "float",
    trusted: bool = False,
    checkpoint_bytes: int | None = None,
    compact_layers: int | None = None,
    pack_block_bytes: int | None = None,
    pack_level: int | None = None,
    pack_streams: bool = True,
    block_cache_bytes: int | None = None,
) -> Database:
    """Opens (creating if needed) the database in folder ``path``; same as ``Database(...)``.

    Use it as a context manager to close it. ``InUseError`` if it is open elsewhere.
    """
    return Database(
        path,
        decimals=decimals,
        trusted=trusted,
        checkpoint_bytes=checkpoint_bytes,
        compact_layers=compact_layers,
        pack_block_bytes=pack_block_bytes,
        pack_level=pack_level,
        pack_streams=pack_streams,
        block_cache_bytes=block_cache_bytes,
    )


# Views behave as read-only mappings and sequences; register them so isinstance() agrees.
Mapping.register(Object)
Sequence.register(Array)
Mapping.register(Table)
Mapping.register(Collection)
Mapping.register(DurableMap)

__all__ = [
    "Array",
    "ArrayIterator",
    "Batch",
    "Collection",
    "CollectionIterator",
    "CorruptError",
    "Database",
    "Document",
    "DurableMap",
    "FormatError",
    "InUseError",
    "InvalidInput",
    "Object",
    "QueryResult",
    "Snapshot",
    "SteleError",
    "Table",
    "TableIterator",
    "View",
    "document_to_json",
    "dumps",
    "json_to_document",
    "loads",
    "open",
]
