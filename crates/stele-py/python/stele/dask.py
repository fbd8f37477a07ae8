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

from ._stele import Table as _Table
from ._stele import TableSet as _TableSet

__all__ = ["build_table_set"]

#: Keys sampled per shard for the split points: partitions come out within a few percent.
SAMPLE_PER_SHARD = 2000


def _encode(x):
    """A key or value as bytes (str as UTF-8); other types are refused, not guessed."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"table keys and values are str or bytes, got {type(x).__name__}: {x!r:.60}")


def _build_shards(frame, key, value, folder, memory, duplicates):
    """One Dask partition: one table per key range in it (a hash shuffle may put several
    ranges in one partition), fed row by row to the sorter. Returns (range, path) rows."""
    import pandas as pd

    rows = []
    for part, group in frame.groupby("_stele_part", sort=True):
        pairs = ((_encode(k), _encode(v)) for k, v in zip(group[key], group[value]))
        table = _Table.build(pairs, folder, memory=memory, duplicates=duplicates)
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
    # The sample: about SAMPLE_PER_SHARD keys per shard, drawn from every partition.
    rows = len(data)
    frac = min(1.0, SAMPLE_PER_SHARD * shards / max(rows, 1))
    sample = [_encode(k) for k in data[key].sample(frac=frac, random_state=0).compute()]
    splits = _TableSet.plan(sample, shards)
    part = data[key].map_partitions(
        lambda ks: ks.map(lambda k: _TableSet.partition(splits, _encode(k))), meta=(key, "int64")
    )
    shuffled = data.assign(_stele_part=part).shuffle("_stele_part", npartitions=shards)
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
