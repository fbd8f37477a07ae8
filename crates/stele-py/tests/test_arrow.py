"""Collection.to_arrow: the Arrow PyCapsule stream read by pyarrow, DuckDB, Polars and
pandas; values equal to the documents; streams read twice and dropped mid-way."""

from __future__ import annotations

import gc
import json

import pytest

import stele

pa = pytest.importorskip("pyarrow")

STATUSES = ["paid", "shipped", "pending"]


def doc(i: int) -> dict:
    d = {
        "status": STATUSES[i % 3],
        "total": i * 1.5,
        "n": i,
        "who": {"name": f"ünï {i}", "city": ["Lima", "Oslo"][i % 2]},
        "tags": [f"t{k}" for k in range(i % 3)],
    }
    if i % 5 == 0:
        d["big"] = 2**70 + i
    if i % 4 == 0:
        d["note"] = None
    return d


DOCS = {f"d{i:04}": doc(i) for i in range(1000)}


@pytest.fixture
def coll(tmp_path):
    with stele.open(tmp_path / "db") as db:
        c = db["docs"]
        c.put_many(DOCS.items())
        yield c


def test_pyarrow_reads_the_documents(coll):
    r = coll.to_arrow(batch_rows=300)
    assert r.columns[0] == "_id"
    table = pa.table(r)
    assert table.num_rows == len(DOCS)
    assert table.schema.field("n").type == pa.int64()
    assert table.schema.field("total").type == pa.float64()
    assert pa.types.is_struct(table.schema.field("who").type)
    assert pa.types.is_list(table.schema.field("tags").type)
    big = table.schema.field("big")
    # JSON text, as Arrow's canonical JSON extension type (over strings).
    assert big.type == pa.json_() and big.type.storage_type == pa.string()
    for row in table.to_pylist():
        want = DOCS[row.pop("_id")]
        assert row["n"] == want["n"] and row["total"] == want["total"]
        assert row["who"] == want["who"] and row["tags"] == want["tags"]
        assert (json.loads(row["big"]) if row["big"] else None) == want.get("big")
    # Batches are at most batch_rows rows.
    reader = pa.RecordBatchReader.from_stream(r)
    assert max(b.num_rows for b in reader) == 300


def test_duckdb_polars_and_pandas_read_the_reader(coll):
    duckdb = pytest.importorskip("duckdb")
    r = coll.to_arrow(fields=["status", "n", "who.city"])
    got = duckdb.sql("select status, count(*) as c from r group by status order by status").fetchall()
    want = sorted((s, sum(1 for d in DOCS.values() if d["status"] == s)) for s in STATUSES)
    assert got == want
    # DuckDB reads a capsule once per scan; the reader makes a new stream each time.
    assert duckdb.sql("select sum(n) from r").fetchall() == [(sum(range(1000)),)]
    assert duckdb.sql('select count(*) from r where "who.city" = \'Oslo\'').fetchall() == [(500,)]
    pl = pytest.importorskip("polars")
    df = r.to_polars()
    assert isinstance(df, pl.DataFrame) and df.columns == ["status", "n", "who.city"]
    assert df["n"].sum() == sum(range(1000))
    assert pl.DataFrame(r).height == 1000
    pytest.importorskip("pandas")
    pdf = r.to_pandas()
    assert list(pdf.columns) == ["status", "n", "who.city"] and len(pdf) == 1000


def test_filters_and_read_all(coll):
    r = coll.to_arrow(filter={"status": "paid", "n": {"$lt": 100}}, fields="n,_id")
    t = r.read_all()
    assert t.column_names == ["n", "_id"]
    assert t.column("n").to_pylist() == [i for i in range(100) if i % 3 == 0]


def test_a_stream_read_twice_and_one_dropped_mid_way(coll):
    r = coll.to_arrow(batch_rows=100)
    first = pa.RecordBatchReader.from_stream(r)
    assert first.read_next_batch().num_rows == 100
    # A second stream starts from the first document, while the first is half read.
    assert pa.table(r).num_rows == 1000
    # Dropping a stream mid-way (cancelling) releases it; the reader still works.
    del first
    gc.collect()
    capsule = r.__arrow_c_stream__()
    del capsule  # never consumed: released by the capsule
    assert pa.table(r).num_rows == 1000
    # The reader keeps its snapshot: later writes are not seen.
    coll["zzz"] = {"n": 1}
    assert pa.table(r).num_rows == 1000
    assert pa.table(coll.to_arrow()).num_rows == 1001


def test_given_schemas_and_misfits(coll):
    schema = pa.schema([("_id", pa.string()), ("n", pa.int64()), ("status", pa.int64())])
    r = coll.to_arrow(schema=schema)
    with pytest.raises(Exception, match=r'd0000.*status holds string.*Int64'):
        pa.table(r)
    t = coll.to_arrow(schema=schema, misfits="null").read_all()
    assert t.column("status").null_count == 1000 and t.column("n").to_pylist()[:3] == [0, 1, 2]
    with pytest.raises(stele.InvalidInput, match="Date32"):
        coll.to_arrow(schema=pa.schema([("n", pa.date32())]))
    with pytest.raises(stele.InvalidInput, match="misfits"):
        coll.to_arrow(misfits="skip")
    assert pa.schema(coll.to_arrow(fields=["n"])) == pa.schema([("n", pa.int64())])


def test_put_arrow_from_pyarrow_pandas_polars_and_back(tmp_path, coll):
    with stele.open(tmp_path / "other") as db:
        # A collection's own Arrow, imported back: same ids (the _id column, which is not
        # a property), same values.
        back = db["back"]
        report = back.put_arrow(coll.to_arrow())
        assert report["imported"] == len(DOCS)
        assert sorted(back.keys()) == sorted(DOCS)
        for i in ("d0000", "d0005", "d0999"):
            got = json.loads(back[i].json())
            assert "_id" not in got
            want = {k: v for k, v in DOCS[i].items() if v is not None}
            # Integers beyond 64 bits travel as JSON text (arrow.json) and come back exact.
            assert got == want
        # pyarrow, a record batch (__arrow_c_array__), pandas and Polars frames.
        t = pa.table({"k": ["a", "b"], "n": [1, None], "tags": [["x"], []]})
        db["t"].put_arrow(t, id="k")
        assert json.loads(db["t"]["b"].json()) == {"k": "b", "tags": []}
        db["rb"].put_arrow(t.to_batches()[0])
        assert len(db["rb"]) == 2 and "0000000001" in db["rb"]
        pd = pytest.importorskip("pandas")
        db["pd"].put_arrow(pd.DataFrame({"x": [1.5, 2.5]}))
        assert db["pd"]["0000000002"]["x"] == 2.5
        pl = pytest.importorskip("polars")
        db["pl"].import_arrow(pl.DataFrame({"s": ["ü", "v"]}))
        assert db["pl"]["0000000001"]["s"] == "ü"
        # All or nothing: a column JSON cannot hold is refused before anything is written.
        import datetime
        bad = pa.table({"d": [datetime.date(2026, 1, 1)]})
        with pytest.raises(stele.InvalidInput, match="column d has type Date32"):
            db["bad"].put_arrow(bad)
        assert "bad" not in db.collections()
        with pytest.raises(stele.InvalidInput, match="names no column"):
            db["t"].put_arrow(t, id="nope")
        with pytest.raises(TypeError, match="put_arrow takes Arrow data"):
            db["t"].put_arrow([1, 2])


def test_find_results_as_arrow(coll):
    duckdb = pytest.importorskip("duckdb")
    found = coll.find({"status": "paid"}, skip=10, limit=50)
    want = [i for i, _ in coll.find({"status": "paid"}, skip=10, limit=50)]
    t = found.to_arrow(fields=["_id", "n"], batch_rows=7).read_all()
    assert t.column("_id").to_pylist() == want
    # The cursor itself is a stream: DuckDB reads it by name.
    assert duckdb.sql("select count(*) from found").fetchall() == [(50,)]


def test_sorted_and_projected_find_results_as_arrow(coll):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    found = coll.find(
        {"status": {"$in": ["paid", "pending"]}},
        sort=[("who.city", 1), ("n", -1)],
        skip=3,
        limit=40,
        projection=["n", "who.city"],
    )
    want = [(i, d.to_python()) for i, d in found]
    t = found.to_arrow(batch_rows=9).read_all()
    assert t.column_names == ["_id", "n", "who"]
    assert t.column("_id").to_pylist() == [i for i, _ in want]
    assert t.column("n").to_pylist() == [d["n"] for _, d in want]
    assert t.column("who").to_pylist() == [d["who"] for _, d in want]
    # Read again, by DuckDB and Polars, in the sort's order.
    assert [r[0] for r in duckdb.sql("select n from found").fetchall()] == [
        d["n"] for _, d in want
    ]
    assert pl.DataFrame(found)["n"].to_list() == [d["n"] for _, d in want]


def test_aggregation_results_as_arrow(coll):
    duckdb = pytest.importorskip("duckdb")
    pipeline = [
        {"$group": {"_id": "$status", "count": {"$count": {}}, "top": {"$max": "$n"}}},
        {"$sort": {"count": -1, "_id": 1}},
    ]
    want = coll.aggregate(pipeline)
    r = coll.aggregate_arrow(pipeline)
    assert r.columns == ["_id", "count", "top"]
    assert r.read_all().to_pylist() == want
    assert r.read_all().to_pylist() == want
    got = duckdb.sql("select _id, count from r order by _id").fetchall()
    assert got == sorted((w["_id"], w["count"]) for w in want)
    with pytest.raises(stele.InvalidInput, match="median"):
        coll.aggregate_arrow([{"$group": {"_id": "$n", "m": {"$median": "$n"}}}])
