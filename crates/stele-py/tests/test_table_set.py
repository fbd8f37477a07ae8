"""Table sets: the reader against a dict, the planning and commit steps, and builds on the
engines users run them on (Dask with two worker processes, Spark local[2])."""

import os
import sys

import pytest

import stele
from conftest import first_lines


def npm_names(n):
    return [line.decode() for line in first_lines("keys/npm-package-names.shuffled.txt.zst", n)]


def build_by_hand(folder, pairs, shards):
    """What an engine does: split points from the keys, one table per range, the commit."""
    splits = stele.TableSet.plan((k for k, _ in pairs), shards)
    paths = []
    for part in range(len(splits) + 1):
        mine = [(k, v) for k, v in pairs if stele.TableSet.partition(splits, k) == part]
        paths.append(stele.Table.build(mine, folder).path)
    return stele.TableSet.commit(folder / "set.sts", paths, splits)


def test_a_set_reads_like_one_table(tmp_path):
    names = npm_names(5000)
    pairs = [(n, str(i)) for i, n in enumerate(names)]
    s = build_by_hand(tmp_path, pairs, 4)
    one = stele.Table.build(pairs, tmp_path / "one")
    assert isinstance(s, stele.TableSet) and isinstance(s, stele.Table) and len(s.shards()) == 4
    assert s.stats()["shards"] == 4 and s.stats()["entries"] == 5000
    assert repr(s).startswith("<stele.TableSet") and one.get_many(names[:3]) == s.get_many(names[:3])
    s = stele.TableSet(s.path)  # reopened from the manifest
    assert len(s) == len(one) == 5000
    assert list(s.items()) == list(one.items())
    assert list(s.range("b", "c", reverse=True)) == list(one.range("b", "c", reverse=True))
    assert list(s.prefix("@")) == list(one.prefix("@"))
    for name in names[:50] + ["no such package!"]:
        assert s.get(name) == one.get(name)
        assert (name in s) == (name in one)
        assert s.rank(name) == one.rank(name)
    assert s[names[7]] == b"7"
    assert s.nth(0) == one.nth(0) and s.nth(-1) == one.nth(-1) == s.last()
    with pytest.raises(IndexError):
        s.nth(5000)
    with pytest.raises(KeyError):
        s["no such package!"]
    s.verify()
    assert sum(sh["entries"] for sh in s.shards()) == 5000
    assert all(os.path.exists(sh["path"]) for sh in s.shards())


def test_commit_refuses_what_is_not_a_set(tmp_path):
    a = stele.Table.build([("a", "1"), ("m", "2")], tmp_path)
    b = stele.Table.build([("k", "3"), ("z", "4")], tmp_path)
    with pytest.raises(stele.InvalidInput, match="overlap"):
        stele.TableSet.commit(tmp_path / "x.sts", [a.path, b.path])
    with pytest.raises(stele.InvalidInput, match="more than one partition"):
        stele.TableSet.commit(tmp_path / "x.sts", [a.path], [b"c"])
    assert not (tmp_path / "x.sts").exists()
    (tmp_path / "bad.sts").write_bytes(b"STELESET" + b"\0" * 40)
    with pytest.raises(stele.CorruptError, match="damaged"):
        stele.TableSet(tmp_path / "bad.sts")
    merged = stele.TableSet.merge(
        [stele.TableSet.commit(tmp_path / "a.sts", [a.path]), stele.TableSet.commit(tmp_path / "b.sts", [b.path])],
        tmp_path / "m.sts",
        2,
    )
    assert list(merged.keys()) == [b"a", b"k", b"m", b"z"]


def test_dask_builds_a_set_on_two_worker_processes(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    import pandas as pd

    import stele.dask

    names = npm_names(20_000)
    frame = pd.DataFrame({"k": names, "v": [str(i) for i in range(len(names))]})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            ddf = dd.from_pandas(frame, npartitions=6)
            s = stele.dask.build_table_set(ddf, tmp_path / "out", key="k", value="v", shards=4)
            # A bag of pairs too.
            import dask.bag as db

            bag = db.from_sequence(list(zip(names[:3000], names[:3000])), npartitions=3)
            b = stele.dask.build_table_set(bag, tmp_path / "bag", shards=2, name="pairs")
    assert len(s) == 20_000 and len(s.shards()) == 4
    sizes = [sh["entries"] for sh in s.shards()]
    assert max(sizes) < 2 * min(sizes), sizes  # split points from the sample balance the shards
    assert s[names[123]] == b"123"
    assert [k.decode() for k in s.keys()] == sorted(names, key=str.encode)
    assert b.path.name == "pairs.sts" and len(b) == 3000 and b[names[5]] == names[5].encode()
    with pytest.raises(ValueError, match="no column"):
        stele.dask.build_table_set(ddf, tmp_path / "x", key="nope")


def test_spark_writes_a_set_through_the_data_source(tmp_path):
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    import stele.spark

    names = npm_names(20_000)
    # Spark's Python workers must run this interpreter (the one stele is installed in), not
    # the first python3 on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("stele-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    try:
        df = spark.createDataFrame([(n, str(i)) for i, n in enumerate(names)], ["k", "v"])
        s = stele.spark.write_table_set(df, tmp_path / "out", shards=4)
        assert len(s) == 20_000 and 1 < len(s.shards()) <= 4
        assert s[names[42]] == b"42"
        assert [k.decode() for k in s.keys()] == sorted(names, key=str.encode)
        # Rows not partitioned by range make overlapping shards: the commit says so.
        with pytest.raises(Exception, match="overlap"):
            df.repartition(3).write.format("stele").mode("overwrite").option("path", str(tmp_path / "bad")).save()
        assert not (tmp_path / "bad" / "set.sts").exists()
    finally:
        spark.stop()


def test_tables_from_arrow_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import stele.arrow

    names = npm_names(3000)
    values = [str(i) for i in range(len(names))]
    whole = pa.table({"k": names, "v": values})
    # Record batches (with sliced arrays: offsets not at 0), large and binary types.
    batches = [whole.slice(0, 1000), whole.slice(1000, 1000).to_batches()[0]]
    big = pa.table({"k": pa.array(names[2000:], pa.large_string()), "v": pa.array([v.encode() for v in values[2000:]], pa.binary())})
    t = stele.arrow.build_table(batches + [big], tmp_path)
    ref = stele.Table.build(zip(names, values), tmp_path / "ref")
    assert list(t.items()) == list(ref.items())
    with pytest.raises(ValueError, match="nulls"):
        stele.arrow.build_table([pa.table({"k": ["a", None], "v": ["1", "2"]})], tmp_path)
    with pytest.raises(TypeError, match="string or binary"):
        stele.arrow.build_table([pa.table({"k": [1, 2], "v": ["1", "2"]})], tmp_path)
    with pytest.raises(ValueError, match="no column"):
        stele.arrow.build_table([pa.table({"key": ["a"], "v": ["1"]})], tmp_path)
    with pytest.raises(stele.InvalidInput, match="duplicate"):
        stele.arrow.build_table([pa.table({"k": ["a", "a"], "v": ["1", "2"]})], tmp_path)
    # Offsets that point outside the data are refused, not read.
    with pytest.raises(ValueError, match="outside"):
        stele._stele._build_columns([((0, 1, b"\0\0\0\0\x09\0\0\0", b"abc", False), (0, 1, b"\0\0\0\0\0\0\0\0", b"", False))], tmp_path)
