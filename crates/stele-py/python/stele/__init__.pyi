"""Type stubs of the stele package (the native part is stele._stele)."""

from collections.abc import Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import Any, Literal, overload

from ._errors import CorruptError as CorruptError
from ._errors import FormatError as FormatError
from ._errors import InUseError as InUseError
from ._errors import InvalidInput as InvalidInput
from ._errors import SteleError as SteleError

Buffer = bytes | bytearray | memoryview
Decimals = Literal["float", "decimal"]
DuplicateKeys = Literal["last_wins", "first_wins", "reject"]
#: A value read from a document: a lazy view for objects and arrays, a Python scalar otherwise.
#: Numbers with a fraction or exponent are float, or decimal.Decimal with decimals="decimal".
Value = Object | Array | str | int | float | bool | None | Any
Key = bytes | str

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
    """A sorted, immutable table of bytes keys and values, read through mmap."""

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

def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Document bytes of a Python value."""

def loads(data: Buffer, *, decimals: Decimals = "float") -> Any:
    """Python value of document bytes (validated first)."""

def json_to_document(
    text: str | Buffer, *, duplicates: DuplicateKeys = "last_wins", sort_keys: bool = False
) -> bytes:
    """Document bytes of JSON text."""

def document_to_json(data: Buffer, *, pretty: bool = False, sorted: bool = False) -> str:
    """JSON text of document bytes (validated first)."""
