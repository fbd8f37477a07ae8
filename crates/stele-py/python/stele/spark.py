"""Table sets written by Spark: a PySpark Python data source named ``stele``.

    import stele.spark
    s = stele.spark.write_table_set(df, "out/", key="k", value="v", shards=16)

or, with the data source registered (``stele.spark.register(spark)``) and the rows already
range-partitioned by key (``df.repartitionByRange(n, "k")``):

    df.write.format("stele").mode("overwrite").option("path", "out/") \\
        .option("key", "k").option("value", "v").save()

Each task sorts its partition into one content-named table in the folder; the driver checks
the tables and writes ``<name>.sts`` in the commit. Needs PySpark 4.0 or newer (Python data
sources, Arrow batches) and Java 17: ``pip install stele[spark]``. The folder must be one
every executor can write and the driver can read (local for ``local[N]``; on a cluster a
shared file system).
"""

import os as _os
from dataclasses import dataclass as _dataclass

from pyspark.sql.datasource import DataSource as _DataSource
from pyspark.sql.datasource import DataSourceArrowWriter as _DataSourceArrowWriter
from pyspark.sql.datasource import WriterCommitMessage as _WriterCommitMessage

from ._stele import TableSet as _TableSet
from .arrow import build_table as _build_table

__all__ = ["SteleDataSource", "register", "write_table_set"]


@_dataclass
class _Shard(_WriterCommitMessage):
    path: "str | None"


class SteleDataSource(_DataSource):
    """Writes a table set. Options: ``path`` (the folder, required), ``key`` and ``value``
    (column names, default ``k`` and ``v``; str or binary), ``name`` (the manifest's name,
    default ``set``), ``memory`` (sort budget per task in bytes, default 256 MiB),
    ``duplicates`` (``reject``, ``keep_last`` or ``keep_first``)."""

    @classmethod
    def name(cls):
        return "stele"

    def writer(self, schema, overwrite):
        return _Writer(self.options, schema)


class _Writer(_DataSourceArrowWriter):
    def __init__(self, options, schema):
        if "path" not in options:
            raise ValueError('the stele data source needs .option("path", FOLDER)')
        self.folder = options["path"]
        self.key = options.get("key", "k")
        self.value = options.get("value", "v")
        self.name = options.get("name", "set")
        self.memory = int(options.get("memory", 256 << 20))
        self.duplicates = options.get("duplicates", "reject")
        names = schema.fieldNames()
        for col in (self.key, self.value):
            if col not in names:
                raise ValueError(f"no column {col!r} (columns: {names}); set the key and value options")

    def write(self, iterator):
        _os.makedirs(self.folder, exist_ok=True)
        # The task's Arrow batches go to the sorter column by column: no Python object per row.
        table = _build_table(
            iterator, self.folder, key=self.key, value=self.value, memory=self.memory, duplicates=self.duplicates
        )
        return _Shard(str(table.path) if len(table) else None)

    def commit(self, messages):
        paths = [m.path for m in messages if m is not None and m.path]
        manifest = _os.path.join(self.folder, f"{self.name}.sts")
        _TableSet.commit(manifest, paths)

    def abort(self, messages):
        # No manifest was written: the shard files are content-named, and a re-run writes
        # the same ones again; nothing refers to them.
        pass


def register(spark):
    """Registers the ``stele`` data source with a SparkSession."""
    spark.dataSource.register(SteleDataSource)


def write_table_set(
    df,
    path,
    *,
    key="k",
    value="v",
    shards=None,
    name="set",
    memory=256 << 20,
    duplicates="reject",
):
    """Writes DataFrame ``df`` (columns ``key`` and ``value``, string or binary) as a table
    set in folder ``path`` and returns it as a ``stele.TableSet``: the rows are
    range-partitioned by key into ``shards`` partitions (Spark samples the split points;
    default: the DataFrame's partition count), each task sorts its partition into a table,
    the driver commits the manifest ``path/<name>.sts``."""
    register(df.sparkSession)
    shards = shards or df.rdd.getNumPartitions()
    folder = _os.path.abspath(_os.fspath(path))
    (
        df.select(key, value)
        .repartitionByRange(shards, key)
        .write.format("stele")
        .mode("overwrite")
        .option("path", folder)
        .option("key", key)
        .option("value", value)
        .option("name", name)
        .option("memory", str(memory))
        .option("duplicates", duplicates)
        .save()
    )
    return _TableSet(_os.path.join(folder, f"{name}.sts"))
