"""Stele: JSON documents you read without parsing, a document database, sorted tables.

- ``Document``: one JSON value stored as a compact binary block; ``doc["a"]["b"]`` reads in
  place (nested objects and arrays come back as lazy ``Object`` / ``Array`` views).
- ``Table``: an immutable sorted mapping of bytes to bytes in a file, built from pairs in any
  order with a memory budget and read through mmap.
- ``open(path)`` / ``Database``: a folder of collections of documents by id, with atomic
  durable batches, snapshots, indexes and queries; ``db["books"]`` is a ``Collection``.
- ``TableSet``: many tables with disjoint key ranges read as one, as distributed builds
  write them (``stele.dask``, ``stele.spark``, ``stele table build --shards``).
- ``DurableMap``: a sorted map of bytes on a stack of tables, with saves, compaction and roots.
- ``serve(path, port=8080)``: the database in a web page, read-only (``python -m stele serve``).

Errors derive from ``SteleError``; see ``stele._errors``.
"""

# Only the API below is public: modules and helpers are imported under private names, so
# `dir(stele)` shows what users are meant to use.
import os as _os
from collections.abc import Mapping as _Mapping
from collections.abc import MutableMapping as _MutableMapping
from collections.abc import Sequence as _Sequence

from ._errors import (
    CorruptError,
    FormatError,
    InUseError,
    InvalidInput,
    QueryTimeout,
    SteleError,
)
from ._stele import (
    Array,
    ArrayIterator,
    ArrowReader,
    Batch,
    Collection,
    CollectionIterator,
    Cursor,
    Database,
    Document,
    DurableMap,
    Object,
    QueryResult,
    Server,
    Snapshot,
    Table,
    TableIterator,
    TableSet,
    View,
    document_to_json,
    dumps,
    json_to_document,
    loads,
    restore,
    serve,
    verify,
)


def open(
    path: "str | _os.PathLike[str]",
    *,
    readonly: bool = False,
    decimals: str = "float",
    trusted: bool = False,
    checkpoint_bytes: int | None = None,
    compact_layers: int | None = None,
    compact_base_ratio: int | None = None,
    pack_block_bytes: int | None = None,
    pack_level: int | None = None,
    pack_streams: bool = True,
    block_cache_bytes: int | None = None,
    create_here: bool = False,
) -> Database:
    """Opens the database in folder ``path``; same as ``Database(...)``.

    A database is created only in a folder that does not exist or is empty: a folder that
    holds other files raises ``InvalidInput`` naming them (``create_here=True`` creates the
    database beside them), and so does a path that is a file.

    Use it as a context manager to close it. ``InUseError`` if another process has it open
    for writing. ``readonly=True`` opens it for reading beside that writer (any number of
    reader processes; ``db.refresh()`` catches up with the writer's commits).

    A handle belongs to the process that opened it: with worker processes (gunicorn,
    multiprocessing), open the database in each worker after the fork::

        def post_fork(server, worker):          # gunicorn hook
            global db
            db = stele.open("/srv/shop", readonly=True)
    """
    return Database(
        path,
        readonly=readonly,
        decimals=decimals,
        trusted=trusted,
        checkpoint_bytes=checkpoint_bytes,
        compact_layers=compact_layers,
        compact_base_ratio=compact_base_ratio,
        pack_block_bytes=pack_block_bytes,
        pack_level=pack_level,
        pack_streams=pack_streams,
        block_cache_bytes=block_cache_bytes,
        create_here=create_here,
    )


# Views behave as read-only mappings and sequences, a collection as a mutable mapping (a
# collection of a snapshot raises TypeError on writes); register them so isinstance() agrees.
_Mapping.register(Object)
_Sequence.register(Array)
_Mapping.register(Table)  # and its subclass TableSet
_MutableMapping.register(Collection)
_Mapping.register(DurableMap)

__all__ = [
    "Array",
    "ArrayIterator",
    "Batch",
    "Collection",
    "CollectionIterator",
    "CorruptError",
    "Cursor",
    "ArrowReader",
    "Database",
    "Document",
    "DurableMap",
    "FormatError",
    "InUseError",
    "InvalidInput",
    "Object",
    "QueryResult",
    "QueryTimeout",
    "Server",
    "Snapshot",
    "SteleError",
    "Table",
    "TableIterator",
    "TableSet",
    "View",
    "document_to_json",
    "dumps",
    "json_to_document",
    "loads",
    "open",
    "restore",
    "serve",
    "verify",
]
