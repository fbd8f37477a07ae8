"""Type stubs of the stele package (the native part is stele._stele)."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from ._errors import CorruptError as CorruptError
from ._errors import FormatError as FormatError
from ._errors import InUseError as InUseError
from ._errors import InvalidInput as InvalidInput
from ._errors import QueryTimeout as QueryTimeout
from ._errors import SteleError as SteleError

Buffer = bytes | bytearray | memoryview
Decimals = Literal["float", "decimal"]
DuplicateKeys = Literal["last_wins", "first_wins", "reject"]
#: A value read from a document: a lazy view for objects and arrays, a Python scalar otherwise.
#: Numbers with a fraction or exponent are float, or decimal.Decimal with decimals="decimal".
Value = Object | Array | str | int | float | bool | None | Any
Key = bytes | str
_T = TypeVar("_T")

class View:
    """Base of Document, Object and Array: a JSON value read in place."""

    @overload
    def __getitem__(self, key: str | int) -> Value: ...
    @overload
    def __getitem__(self, key: slice) -> list[Value]: ...
    def get(self, key: str | int, default: Any = None) -> Value:
        """Like self[key]; default when absent."""
    def __len__(self) -> int: ...
    def __contains__(self, item: object) -> bool: ...
    def __iter__(self) -> Iterator[Any]: ...
    def keys(self) -> list[str]:
        """Keys of an object in input order (TypeError for other values)."""
    def values(self) -> list[Value]: ...
    def items(self) -> list[tuple[str, Value]]: ...
    def path(self, path: str, default: Any = None) -> Value:
        """The value at a path such as 'a.b[0]' or 'a["key.with.dots"]'; default if absent."""
    def to_python(self) -> Any:
        """Plain Python values (dict, list, scalars), equal to json.loads of the JSON text."""
    def to_dict(self) -> dict[str, Any]:
        """Like to_python(); TypeError unless the value is an object."""
    def json(self, pretty: bool = False, sorted: bool = False) -> str:
        """Exact JSON text: numbers as written, keys in input order unless sorted."""
    def __eq__(self, other: object) -> bool: ...

class Document(View):
    """A document: validated bytes read in place."""

    def __init__(self, data: Buffer, *, decimals: Decimals = "float") -> None:
        """Opens document bytes, validated first (CorruptError) and copied."""
    @staticmethod
    def from_json(
        text: str | Buffer,
        *,
        decimals: Decimals = "float",
        duplicates: DuplicateKeys = "last_wins",
        sort_keys: bool = False,
    ) -> Document:
        """Converts JSON text; InvalidInput (with line, column, offset) if malformed."""
    @staticmethod
    def from_python(value: Any, *, decimals: Decimals = "float", sort_keys: bool = False) -> Document:
        """Builds a document from dict/list/tuple/str/int/float/bool/None/Decimal values."""
    def to_bytes(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def decimals(self) -> Decimals: ...
    @property
    def root(self) -> Value: ...

class Object(View):
    """A JSON object inside a document (a read-only mapping of str to values)."""

    def __iter__(self) -> Iterator[str]: ...

class Array(View):
    """A JSON array inside a document (a read-only sequence; O(1) indexing)."""

    def __iter__(self) -> Iterator[Value]: ...

class ArrayIterator(Iterator[Value]):
    def __next__(self) -> Value: ...

class TableIterator(Iterator[Any]):
    """Keys (bytes), values (bytes) or (key, value) pairs of a Table, in key order."""

    def __next__(self) -> Any: ...

class Table:
    """A sorted, immutable table of bytes keys and values, read through mmap.

    Keys may be given as str (UTF-8) or bytes, but keys and values always come back as
    bytes: ``t["react"]`` gives ``b"19.1.0"``, ``list(t)`` gives ``[b"react"]``; use
    ``.decode()`` where text is wanted.
    """

    def __init__(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def open(path: str | PathLike[str]) -> Table: ...
    @staticmethod
    def build(
        pairs: Iterable[tuple[Key, Key | Document]],
        path: str | PathLike[str],
        *,
        memory: int = 256 << 20,
        duplicates: Literal["reject", "keep_last", "keep_first"] = "reject",
        temp_dir: str | PathLike[str] | None = None,
    ) -> Table:
        """Builds a table from pairs in any order (a folder, or a file path ending in .stt)."""
    @property
    def path(self) -> Path: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def get(self, key: Key, default: Any = None) -> bytes | Any: ...
    def get_many(self, keys: Iterable[Key]) -> list[bytes | None]: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> TableIterator: ...
    def keys(self) -> TableIterator: ...
    def values(self) -> TableIterator: ...
    def items(self) -> TableIterator: ...
    def range(
        self, start: Key | None = None, end: Key | None = None, *, reverse: bool = False
    ) -> TableIterator:
        """(key, value) pairs with start <= key < end."""
    def prefix(self, prefix: Key, *, reverse: bool = False) -> TableIterator: ...
    def nth(self, i: int) -> tuple[bytes, bytes]: ...
    def rank(self, key: Key) -> int: ...
    def first(self) -> tuple[bytes, bytes] | None: ...
    def last(self) -> tuple[bytes, bytes] | None: ...
    def stats(self) -> dict[str, Any]: ...
    def verify(self) -> None: ...

#: A value to store as a document: a dict (or any JSON-like Python value), JSON text as str or
#: bytes, or a Document (or a view of one).
Storable = dict[str, Any] | list[Any] | str | bytes | View | Any

class TableSet(Table):
    """Many tables with disjoint key ranges (shards) read as one sorted table through its
    manifest (.sts): a Table in every read; keys and values come back as bytes."""

    def __init__(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def open(path: str | PathLike[str]) -> TableSet: ...
    @staticmethod
    def plan(sample: Iterable[Key], shards: int) -> list[bytes]:
        """Split points for `shards` partitions from a sample of the keys."""
    @staticmethod
    def partition(splits: list[bytes], key: Key) -> int:
        """The partition (0 to len(splits)) of key."""
    @staticmethod
    def commit(
        manifest: str | PathLike[str],
        shards: Iterable[str | PathLike[str]],
        splits: list[bytes] = ...,
    ) -> TableSet:
        """Checks the shard tables and writes the manifest atomically."""
    @staticmethod
    def merge(
        sets: list[TableSet],
        manifest: str | PathLike[str],
        shards: int,
        *,
        duplicates: Literal["reject", "keep_last", "keep_first"] = "keep_last",
    ) -> TableSet: ...
    def shards(self) -> list[dict[str, Any]]: ...

class Database:
    """A database: a folder of collections of JSON documents by id (one process at a time)."""

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        readonly: bool = False,
        decimals: Decimals = "float",
        trusted: bool = False,
        checkpoint_bytes: int | None = None,
        compact_layers: int | None = None,
        compact_base_ratio: int | None = None,
        pack_block_bytes: int | None = None,
        pack_level: int | None = None,
        pack_streams: bool = True,
        block_cache_bytes: int | None = None,
        create_here: bool = False,
    ) -> None:
        """Opens or creates the database; InUseError (with pid) if another process has it
        open for writing. A database is created only in a folder that does not exist or is
        empty: a folder of other files raises InvalidInput naming them (create_here=True
        creates it beside them), a file raises InvalidInput. readonly=True reads beside that writer (refresh() catches up).
        A handle (and its snapshots and iterators) belongs to the process that opened it:
        open again after fork().

        trusted=True skips validating documents read: only for databases nothing but Stele wrote.
        """
    def close(self) -> None:
        """Closes it, compact at rest: the log's records go into tables (collections written
        mostly since their last packing are packed into compressed blocks), the log is
        emptied. Folder lock released once operations in other threads finish. A read-only
        handle writes nothing: it lets go of its files."""
    def refresh(self) -> int:
        """Read-only: catches up with the writer's commits; the last commit's number."""
    @property
    def readonly(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> Path: ...
    def __enter__(self) -> Database: ...
    def __exit__(self, *exc: object) -> bool: ...
    def __getitem__(self, name: str) -> Collection:
        """Collection `name` (created by its first write); InvalidInput for a bad name."""
    def __contains__(self, name: object) -> bool: ...
    def collections(self) -> list[str]: ...
    def batch(self) -> Batch:
        """Puts and deletes committed all or nothing (a context manager)."""
    def snapshot(self) -> Snapshot:
        """A consistent read-only view as of the last commit."""
    def checkpoint(self) -> None: ...
    def compact(self) -> None:
        """Merges every collection into one table each (packing compressed collections into
        blocks), then removes the compression dictionaries no document needs any more.
        Other threads' writes go on while it merges."""
    def stats(self) -> dict[str, dict[str, int]]:
        """{collection: {documents, layers, table_bytes, stored_bytes, unsaved_changes, packed_blocks, pack_bytes, index_bytes, dictionaries}}."""
    def backup(
        self,
        dest: str | PathLike[str],
        *,
        copy: bool = False,
        keep: str | None = None,
        max_rate: float | str | None = None,
    ) -> dict[str, int]:
        """Backs the database up into folder dest while writes go on: a new backup, or only
        what is new since one made before (tables hard-linked on the same file system unless
        copy=True, else copied and checked against their names; the manifest last). keep: the
        points kept, a count ("10") or an age ("24h"). max_rate: copy tables at most this many
        MB/s (or "512KB/s", "1GB/s"; "none": the disk's rate), leaving the disk part of the
        time to the database's writer. Returns {version, manifest_version,
        tables_copied, tables_linked, tables_kept, log_bytes, bytes_written}. The backup opens
        read-only as a database; restore() makes a new one from it."""
    def disk_usage(self) -> dict[str, int]:
        """{total_bytes, log_bytes, log_zeroes_bytes, index_bytes}: bytes the folder takes on
        disk now, how many of them are the write-ahead log's records, the zeroes the log keeps
        ahead of them (as many as its records, 16 KiB to 1 MiB, none once closed), and the
        indexes' tables (best effort while a compaction runs)."""

def open(
    path: str | PathLike[str],
    *,
    readonly: bool = False,
    decimals: Decimals = "float",
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
    """Same as Database(path, ...)."""

class Snapshot:
    """Every collection as of one commit, read-only; later writes do not change it."""

    def __getitem__(self, name: str) -> Collection: ...
    def __contains__(self, name: object) -> bool: ...
    def collections(self) -> list[str]: ...
    @property
    def seq(self) -> int: ...
    def stats(self) -> dict[str, dict[str, int]]: ...

class CollectionIterator(Iterator[Any]):
    """Ids (str), Documents or (id, Document) pairs of a collection, from one snapshot."""

    def __next__(self) -> Any: ...

class QueryResult:
    """Rows of a query as (id, Document), and how it ran."""

    @property
    def plan(self) -> str: ...
    @property
    def index(self) -> str | None:
        """The index used, None for a full scan."""
    @property
    def rows(self) -> list[tuple[Id, Document]]: ...
    def ids(self) -> list[Id]: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, i: int) -> tuple[Id, Document]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[Id, Document]]: ...
    def __iter__(self) -> Iterator[tuple[Id, Document]]: ...

Id = str | int
"""A document id: a str, or an int (a collection whose first documents have int ids keeps
them as integers, -2**63 to 2**63-1, in numeric order; ids of the other kind raise)."""
Filter = Mapping[str, Any] | str
"""A filter in MongoDB's JSON form, as a dict or JSON text: {"a.b": 5, "n": {"$gte": 1}}."""
SortSpec = str | Mapping[str, int] | Sequence[str | tuple[str, int | str]]
""""a", "a:desc", {"a": 1, "b": -1} or [("a", 1), ("b", -1)] (also "b:desc" in a list)."""
Projection = Sequence[str] | Mapping[str, int] | str
"""Paths to keep (["a", "b.c"]), or {"a": 1} to keep / {"a": 0} to drop."""
TimeBudget = float | timedelta

class Cursor(Iterator[tuple[Id, Document]]):
    """The lazy result of Collection.find: the query starts (without the GIL) when it is first
    iterated, over the snapshot of the find() call, and yields (id, Document) pairs as it
    finds them; a cursor dropped early stops the query."""

    def __next__(self) -> tuple[Id, Document]: ...
    def stats(self) -> dict[str, int]:
        """What the query has done so far: {"keys_examined", "docs_examined", "rows",
        "elapsed_us"} (rows: yielded so far); zeros before the first row is asked for."""
    def to_arrow(
        self,
        fields: list[str] | str | None = None,
        *,
        schema: Any | None = None,
        batch_rows: int = 65536,
        sample_rows: int | None = None,
        misfits: str = "error",
    ) -> ArrowReader:
        """The rows of this find as Arrow record batches: its filter, skip and limit, in its
        sort's order and its projection's shape (a nested path kept is a struct column).
        Without a sort or projection, read as Collection.to_arrow reads documents; with one,
        the rows come from the query and the types are inferred from them (the query runs
        once more to infer them unless schema is given)."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def explain(self) -> dict[str, Any]:
        """Runs the query without keeping its rows and says how: {"plan", "index",
        "full_scan", "covered", "sorted_in_memory", "candidates": [{"index", "chosen",
        "reason"}], "keys_examined", "docs_examined", "rows", "elapsed_us"}."""

class ArrowReader:
    """A collection as Arrow record batches (Collection.to_arrow): read by anything that takes
    the Arrow PyCapsule interface (duckdb.sql("select .. from r"), polars.DataFrame(r),
    pyarrow.table(r)); every read is a new stream over the same snapshot."""

    @property
    def columns(self) -> list[str]: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def read_all(self) -> Any:
        """Every batch as one pyarrow.Table (needs pyarrow)."""
    def to_pandas(self) -> Any:
        """A pandas.DataFrame (needs pyarrow and pandas)."""
    def to_polars(self) -> Any:
        """A polars.DataFrame (needs polars only)."""

class Collection:
    """Documents by id: a mapping of str (or int: Id) to Document. Read-only if from a
    Snapshot."""

    @property
    def name(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    def __len__(self) -> int: ...
    def __contains__(self, id: object) -> bool: ...
    def __getitem__(self, id: Id) -> Document:
        """The document (lazy); KeyError if absent."""
    def get(self, id: Id, default: Any = None) -> Document | Any: ...
    def __iter__(self) -> CollectionIterator:
        """Ids in order, as of the call."""
    def keys(self) -> CollectionIterator: ...
    def values(self) -> CollectionIterator:
        """Documents in id order, from one snapshot."""
    def items(self) -> CollectionIterator:
        """(id, Document) pairs in id order, from one snapshot."""
    def __setitem__(self, id: Id, value: Storable) -> None:
        """Inserts or replaces, committed (durable) at once."""
    def __delitem__(self, id: Id) -> None:
        """Deletes, committed at once; KeyError if absent."""
    @overload
    def pop(self, id: Id) -> Document: ...
    @overload
    def pop(self, id: Id, default: _T) -> Document | _T:
        """Removes and returns the document, committed at once; default (or KeyError) if absent."""
    def popitem(self) -> tuple[Id, Document]:
        """Removes and returns the document with the smallest id; KeyError if empty."""
    def setdefault(self, id: Id, default: Storable = None) -> Document:
        """The document; if absent, stores default first (None stores JSON null)."""
    def update(
        self,
        other: Mapping[str, Storable] | Iterable[tuple[str, Storable]] = (),
        /,
        **kwargs: Storable,
    ) -> None:
        """Stores every (id, value) in one atomic, durable commit."""
    def clear(self) -> None:
        """Deletes every document (commits every 10,000); indexes stay."""
    def put_many(
        self,
        items: Iterable[tuple[str, Storable]] | Iterable[Any],
        *,
        id_field: str | None = None,
        batch: int = 1000,
    ) -> int:
        """Stores (id, value) pairs, or values whose field id_field is the id; commits every batch.

        JSON text values (str, bytes) of a batch are converted on all cores, without the GIL."""
    def import_file(
        self,
        path: str | PathLike[str],
        *,
        format: Literal["json", "jsonl", "dir"] | None = None,
        id_field: str | None = None,
        skip_bad: bool = False,
        wrap_non_objects: str | None = None,
        duplicates: DuplicateKeys = "last_wins",
        batch: int = 10_000,
    ) -> dict[str, Any]:
        """The store's import (as `stele import`): all or nothing; ids from id_field, else
        records numbered from 1 ("0000000001"). A bad record raises InvalidInput with `line`,
        `column`, `record`; a record that is not a JSON object is bad unless
        wrap_non_objects="field" stores it as {"field": record}. A zstd-compressed file
        (.zst) is read as it is; gzip, bzip2, xz or zip input raises InvalidInput saying how
        to unpack it. Returns {"imported", "skipped", "bad", "bytes_read", "batches"}."""
    def import_jsonl(
        self,
        path: str | PathLike[str],
        *,
        id_field: str | None = None,
        skip_bad: bool = False,
        wrap_non_objects: str | None = None,
        duplicates: DuplicateKeys = "last_wins",
        batch: int = 10_000,
    ) -> dict[str, Any]:
        """import_file of a JSON Lines file."""
    def query(
        self,
        *,
        eq: dict[str, Any] | tuple[str, Any] | None = None,
        range: dict[str, tuple[Any, Any]] | tuple[str, tuple[Any, Any]] | None = None,
        prefix: dict[str, str] | tuple[str, str] | None = None,
        order_by: str | None = None,
        desc: bool = False,
        limit: int | None = None,
        select: list[str] | None = None,
    ) -> QueryResult:
        """One condition on one field (range: lo <= value < hi, None for an open side)."""
    def put_arrow(self, data: Any, *, id: str | None = None, batch: int = 10_000) -> dict[str, Any]:
        """Imports every row of Arrow data (anything with __arrow_c_stream__ or
        __arrow_c_array__: pyarrow, pandas, Polars, DuckDB results) as a document, all or
        nothing, with the store's own import; ids from the column id (default: _id when
        there is one), else numbered. Columns JSON cannot hold raise InvalidInput first."""
    def import_arrow(self, data: Any, *, id: str | None = None, batch: int = 10_000) -> dict[str, Any]:
        """The same as put_arrow."""
    def import_parquet(
        self,
        path: str | PathLike[str],
        *,
        id: str | None = None,
        skip_bad: bool = False,
        batch: int = 10_000,
    ) -> dict[str, Any]:
        """Imports every row of the Parquet file path as a document, as import_arrow does, read
        in this process without pyarrow (the import `stele import` runs): all or nothing; ids
        from the column id (default: _id when there is one), else numbered."""
    def to_arrow(
        self,
        fields: list[str] | str | None = None,
        filter: Filter | None = None,
        *,
        schema: Any | None = None,
        batch_rows: int = 65536,
        sample_rows: int | None = None,
        misfits: str = "error",
    ) -> ArrowReader:
        """The collection as Arrow record batches of at most batch_rows rows, from this moment's
        snapshot: _id and every root property, or the paths in fields; types inferred from every
        document, or the first sample_rows (faster; a later misfit possible) (objects to structs, arrays to lists, mixed types and
        integers beyond 64 bits to JSON text) or given as a pyarrow schema. A value that does
        not fit its column stops the stream with an error naming the document and field, or
        reads as null with misfits="null"."""
    def to_parquet(
        self,
        path: str | PathLike[str],
        fields: list[str] | str | None = None,
        filter: Filter | None = None,
        *,
        schema: Any | None = None,
        sample_rows: int | None = None,
        misfits: str = "error",
        row_group_rows: int = 8192,
    ) -> int:
        """Writes the collection (or the fields in fields, the documents filter keeps) as the
        Parquet file path (zstd), typed as to_arrow types it, in this process without pyarrow,
        in row groups of about row_group_rows rows; returns the rows written. Written beside
        path, synced, and renamed into place once whole: durable when this returns; after an
        error an existing file at path is left as it was."""
    def find(
        self,
        filter: Filter | None = None,
        *,
        sort: SortSpec | None = None,
        skip: int = 0,
        limit: int | None = None,
        projection: Projection | None = None,
        time_budget: TimeBudget | None = None,
    ) -> Cursor:
        """The documents matching filter (None: all), as a lazy Cursor of (id, Document).

        A filter, sort or projection that is not acceptable raises InvalidInput (a ValueError)
        whose `at` names the place ("$.price.$gte"); past time_budget, QueryTimeout."""
    def find_one(
        self,
        filter: Filter | None = None,
        *,
        sort: SortSpec | None = None,
        skip: int = 0,
        projection: Projection | None = None,
        time_budget: TimeBudget | None = None,
    ) -> tuple[Id, Document] | None:
        """The first result of find with the same arguments, or None."""
    def count(
        self,
        filter: Filter | None = None,
        *,
        skip: int = 0,
        limit: int | None = None,
        time_budget: TimeBudget | None = None,
    ) -> int:
        """How many documents match (after skip and limit); from index keys alone when they
        decide the filter."""
    def count_explain(
        self,
        filter: Filter | None = None,
        *,
        skip: int = 0,
        limit: int | None = None,
        time_budget: TimeBudget | None = None,
    ) -> dict[str, Any]:
        """count with how it ran: Cursor.explain()'s dict plus "count"; "covered" is True when
        no document was read."""
    def distinct(self, field: str, filter: Filter | None = None) -> list[Any]:
        """The distinct values of field (array elements count one by one), in value order."""
    def aggregate(self, pipeline: Sequence[Mapping[str, Any]] | str) -> list[Any]:
        """Runs a pipeline ($match $group $sort $limit $skip $project $count $unwind); the
        output documents as dicts."""
    def aggregate_arrow(
        self,
        pipeline: Sequence[Mapping[str, Any]] | str,
        fields: list[str] | str | None = None,
        *,
        schema: Any | None = None,
        batch_rows: int = 65536,
        sample_rows: int | None = None,
        misfits: str = "error",
    ) -> ArrowReader:
        """The output of aggregate(pipeline) as Arrow record batches: a column per property
        of the output documents (a $group's _id is its key), types inferred from them unless
        schema is given; the pipeline runs once, and the reader reads any number of times."""
    @overload
    def create_index(
        self,
        fields: str | Mapping[str, int] | Sequence[str | tuple[str, int | str]],
        *,
        name: str | None = None,
    ) -> str:
        """Indexes fields, each ascending or descending: "a", "a:desc", ["a", ("b", -1)] or
        {"a": 1, "b": -1}. The name defaults to "a_1_b_-1"; returns it."""
    @overload
    def create_index(self, name: str, fields: str | list[str], /) -> str:
        """The form of earlier versions: create_index(name, fields)."""
    def drop_index(self, name: str) -> None: ...
    def indexes(self) -> dict[str, list[str]]:
        """{name: fields}; a descending field as "path:desc"."""
    def index_stats(self) -> dict[str, dict[str, Any]]:
        """{name: {fields, entries, layers, table_bytes, key_bytes, array_fields}}; array_fields: the fields a document has held an array at (a sort the filter also tests is then sorted in memory)."""
    def stats(self) -> dict[str, int]: ...
    def compression_stats(self) -> dict[str, float]:
        """{raw_bytes, stored_bytes, ratio}: bytes before and after compression (a pass over the values' headers)."""

class Batch:
    """Operations across collections, committed all or nothing.

    As a context manager: commits on normal exit, discards on an exception.
    """

    def put(self, collection: str, id: Id, value: Storable) -> None: ...
    def delete(self, collection: str, id: Id) -> None: ...
    def __len__(self) -> int: ...
    def commit(self) -> None: ...
    def discard(self) -> None: ...
    def __enter__(self) -> Batch: ...
    def __exit__(self, *exc: object) -> bool: ...

class DurableMap:
    """A sorted map of bytes on a stack of tables (base, diffs) plus unsaved changes in memory."""

    @staticmethod
    def build(pairs: Iterable[tuple[Key, Key | Document]], dir: str | PathLike[str]) -> DurableMap:
        """Builds from pairs in any order (a key given twice keeps its last value)."""
    @staticmethod
    def new(dir: str | PathLike[str]) -> DurableMap: ...
    @staticmethod
    def open(dir: str | PathLike[str], table_id: str) -> DurableMap:
        """The map whose top table is table_id (hex, as save() returned it)."""
    @staticmethod
    def at_root(dir: str | PathLike[str], name: str, *, create: bool = False) -> DurableMap:
        """The map root `name` points at, bound to it for commit()."""
    @property
    def dir(self) -> Path: ...
    @property
    def id(self) -> str | None: ...
    @property
    def layers(self) -> list[str]: ...
    @property
    def unsaved_changes(self) -> int: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def get(self, key: Key, default: Any = None) -> bytes | Any: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> TableIterator: ...
    def keys(self) -> TableIterator: ...
    def values(self) -> TableIterator: ...
    def items(self) -> TableIterator: ...
    def range(
        self, start: Key | None = None, end: Key | None = None, *, reverse: bool = False
    ) -> TableIterator: ...
    def prefix(self, prefix: Key, *, reverse: bool = False) -> TableIterator: ...
    def nth(self, i: int) -> tuple[bytes, bytes]: ...
    def rank(self, key: Key) -> int: ...
    def first(self) -> tuple[bytes, bytes] | None: ...
    def last(self) -> tuple[bytes, bytes] | None: ...
    def put(self, key: Key, value: Key | Document) -> None: ...
    def __setitem__(self, key: Key, value: Key | Document) -> None: ...
    def remove(self, key: Key) -> bool: ...
    def __delitem__(self, key: Key) -> None: ...
    def save(self) -> str: ...
    def compact(self) -> str: ...
    def commit(self) -> str: ...
    def snapshot(self) -> DurableMap: ...
    def collect_garbage(self) -> dict[str, Any]: ...

def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Document bytes of a Python value."""

def loads(data: Buffer, *, decimals: Decimals = "float") -> Any:
    """Python value of document bytes (validated first)."""

def json_to_document(
    text: str | Buffer, *, duplicates: DuplicateKeys = "last_wins", sort_keys: bool = False
) -> bytes:
    """Document bytes of JSON text."""

def verify(path: str | PathLike[str]) -> dict[str, Any]:
    """Checks every file of a database or backup: manifests, every table's bytes against its
    name and every block's checksum, every log record. Returns {ok, last_version, tables,
    records, problems: [{path, offset, problem, damage}]}; ok is False if anything is damaged."""

def restore(
    backup_dir: str | PathLike[str], out: str | PathLike[str], *, at: int | str | None = None
) -> int:
    """Makes the new database folder out from a backup, all or nothing, at the latest version
    (at=None), a version (an int) or a time ("2026-11-28T12:30:00Z", "@unix-seconds", "-10m").
    A damaged or missing file it needs raises SteleError, and nothing is written.
    Returns the version restored."""

def document_to_json(data: Buffer, *, pretty: bool = False, sorted: bool = False) -> str:
    """JSON text of document bytes (validated first)."""

class Server:
    """A running ``stele.serve(..., block=False)``; stops on stop(), at the end of a with
    block, or when collected."""

    @property
    def url(self) -> str: ...
    @property
    def port(self) -> int: ...
    def stop(self) -> None: ...
    def __enter__(self) -> Server: ...
    def __exit__(self, *args: object) -> None: ...

@overload
def serve(
    path: str | PathLike[str],
    *,
    port: int = 8080,
    host: str = "127.0.0.1",
    workers: int = 4,
    time_limit: float = 1.0,
    block: Literal[True] = True,
) -> None:
    """Serves the database read-only in a web page at http://host:port/ until Ctrl-C."""

@overload
def serve(
    path: str | PathLike[str],
    *,
    port: int = 8080,
    host: str = "127.0.0.1",
    workers: int = 4,
    time_limit: float = 1.0,
    block: Literal[False],
) -> Server:
    """Starts serving the database and returns the running Server."""
