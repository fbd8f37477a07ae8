"""Tables from Arrow data: pyarrow RecordBatches or Tables whose key and value columns are
string or binary, sorted into a table without a Python object per row (the engines' table-set
builders use this; ``pip install pyarrow``).

    import pyarrow as pa, stele.arrow
    t = stele.arrow.build_table([pa.table({"k": ["b", "a"], "v": ["2", "1"]})], "tables/")
    t["a"]                                   # b'1'
"""

from ._stele import _build_columns

__all__ = ["build_table"]


def _column(array, name):
    """A string or binary pyarrow Array as (offset, length, offsets, data, wide)."""
    import pyarrow as pa

    t = array.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        wide = False
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        wide = True
    else:
        raise TypeError(f"column {name!r} is {t}: table keys and values are string or binary columns")
    if array.null_count:
        raise ValueError(f"column {name!r} has {array.null_count} nulls: a table holds no missing keys or values")
    _, offsets, data = array.buffers()
    return (array.offset, len(array), offsets.to_pybytes(), data.to_pybytes() if data is not None else b"", wide)


def _batches(data, key, value):
    """(keys, values) column pairs of every record batch in `data`."""
    import pyarrow as pa

    for item in data:
        parts = item.to_batches() if isinstance(item, pa.Table) else [item]
        for batch in parts:
            names = batch.schema.names
            for col in (key, value):
                if col not in names:
                    raise ValueError(f"no column {col!r} (columns: {names}); pass key= and value=")
            yield (_column(batch.column(key), key), _column(batch.column(value), value))


def build_table(data, path, *, key="k", value="v", memory=256 << 20, duplicates="reject", temp_dir=None):
    """Builds a table from an iterable of pyarrow RecordBatches or Tables (columns ``key`` and
    ``value``, string or binary, in any order) and returns it as a ``stele.Table``. ``path``,
    ``memory``, ``duplicates`` and ``temp_dir`` are those of ``Table.build``."""
    return _build_columns(
        _batches(data, key, value), path, memory=memory, duplicates=duplicates, temp_dir=temp_dir
    )
