"""Table sets built on Dask: each worker sorts one key range into a table, the manifest is
written on the client at the end.

    import dask.dataframe as dd
    import stele.dask
    ddf = dd.read_parquet("pairs/")                      # columns k (str/bytes) and v
    s = stele.dask.build_table_set(ddf, "out/", key="k", value="v", shards=16)
    s["some key"]                                        # a stele.TableSet

``pip install stele[dask]`` installs Dask. The output folder must be one every worker can
write and the client can read (a local folder for a ``LocalCluster``; on a real cluster a
shared file system, or copy each shard to where readers are before the commit).
"""

import os as _os

from ._stele import TableSet as _TableSet

__all__ = ["build_table_set"]

#: Keys sampled per shard for the split points: partitions come out within a few percent.
SAMPLE_PER_SHARD = 2000


def _encode(x):  # keys of the sample and partitioning; rows go to the sorter as Arrow columns
    """A key or value as bytes (str as UTF-8); other types are refused, not guessed."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"table keys and values are str or bytes, got {type(x).__name__}: {x!r:.60}")


def _partitions(keys, splits):
    """The key range of each key of a pandas Series: the number of split points <= it
    (``TableSet.partition``), found by a binary search in C. Split points come from the
    keys' UTF-8 bytes; str keys compare with them decoded (code point order is UTF-8 byte
    order)."""
    import numpy as np
    import pandas as pd

    values = keys.to_numpy(dtype=object)
    text = len(values) > 0 and isinstance(values[0], str)
    points = np.array([s.decode() if text else s for s in splits], dtype=object)
    return pd.Series(np.searchsorted(points, values, side="right"), index=keys.index, dtype="int64")


def _build_shards(frame, key, value, folder, memory, duplicates):
    """One Dask partition, indexed by key range (one range per partition after the shuffle;
    any number is handled): one table per range, its rows handed to the sorter as Arrow
    columns. Returns (range, path) rows."""
    import pandas as pd
    import pyarrow as pa

    from .arrow import build_table

    rows = []
    for part, group in frame.groupby(level=0, sort=True):
        batch = pa.RecordBatch.from_pandas(group[[key, value]], preserve_index=False)
        table = build_table([batch], folder, key=key, value=value, memory=memory, duplicates=duplicates)
        if len(table):
            rows.append((int(part), str(table.path)))
    return pd.DataFrame(rows, columns=["part", "path"])


def build_table_set(
    data,
    path,
    *,
    key="k",
    value="v",
    shards=None,
    name="set",
    memory=256 << 20,
    duplicates="reject",
):
    """Builds a table set from a ``dask.dataframe`` (columns ``key`` and ``value``, str or
    bytes) or a ``dask.bag`` of ``(key, value)`` pairs, and returns it as a
    ``stele.TableSet``.

    Steps: a sample of the keys gives ``shards - 1`` split points (``TableSet.plan``); the
    rows are shuffled so each key range lands in one partition; each partition sorts its
    ranges into content-named tables in ``path`` (``Table.build`` with ``memory`` bytes,
    spilling beyond); the client checks the tables and writes ``path/<name>.sts``
    (``TableSet.commit``). A failed or killed worker leaves no manifest; running it again
    rebuilds the same files. ``shards`` defaults to the number of partitions.
    """
    import dask.bag as db
    import dask.dataframe as dd

    if isinstance(data, db.Bag):
        data = data.to_dataframe(meta={key: object, value: object})
    if not isinstance(data, dd.DataFrame):
        raise TypeError("build_table_set takes a dask.dataframe.DataFrame or a dask.bag.Bag")
    for col in (key, value):
        if col not in data.columns:
            raise ValueError(f"no column {col!r} (columns: {list(data.columns)}); pass key= and value=")
    shards = shards or data.npartitions
    if shards < 1:
        raise ValueError(f"shards={shards}: give at least 1")
    _os.makedirs(path, exist_ok=True)
    folder = _os.fspath(path)
    # The sample: about SAMPLE_PER_SHARD keys per shard, the same number from every
    # partition (one pass; no count of the rows first).
    per_partition = -(-SAMPLE_PER_SHARD * shards // data.npartitions)
    picked = data[key].map_partitions(
        lambda ks: ks.sample(n=min(len(ks), per_partition), random_state=0), meta=(key, object)
    )
    sample = [_encode(k) for k in picked.compute()]
    splits = _TableSet.plan(sample, shards)
    part = data[key].map_partitions(_partitions, splits, meta=(key, "int64"))
    # Range i goes to partition i exactly: an index on the range number with divisions
    # 0, 1, ..., n (a hash shuffle would put several ranges in one partition, and one worker
    # would hold several shards' rows at once).
    ranges = len(splits) + 1
    shuffled = data.assign(_stele_part=part).set_index(
        "_stele_part", divisions=list(range(ranges + 1))
    )
    built = shuffled.map_partitions(
        _build_shards,
        key,
        value,
        folder,
        memory,
        duplicates,
        meta={"part": "int64", "path": object},
    ).compute()
    return _TableSet.commit(_os.path.join(folder, f"{name}.sts"), list(built["path"]), splits)
