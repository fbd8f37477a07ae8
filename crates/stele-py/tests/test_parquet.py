"""Collection.to_parquet: the Parquet file written in this process, read back by pyarrow
equal to to_arrow's table (types included); fields, filters and row groups; errors leave
nothing behind."""

from __future__ import annotations

import pytest

import stele

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def doc(i: int) -> dict:
    d = {
        "kind": ["a", "b", "c"][i % 3],
        "n": i,
        "x": i / 4,
        "who": {"name": f"ünï {i}", "tags": [f"t{k}" for k in range(i % 3)]},
    }
    if i % 7 == 0:
        d["big"] = 2**70 + i
    if i % 4 == 0:
        d["note"] = None
    return d


DOCS = {f"d{i:05}": doc(i) for i in range(20_000)}


@pytest.fixture
def coll(tmp_path):
    with stele.open(tmp_path / "db") as db:
        c = db["docs"]
        c.put_many(DOCS.items())
        yield c


def test_the_file_reads_back_as_to_arrow(coll, tmp_path):
    out = tmp_path / "all.parquet"
    assert coll.to_parquet(out) == len(DOCS)
    back = pq.read_table(out)
    want = pa.table(coll.to_arrow())
    assert back.schema.equals(want.schema)
    assert back.equals(want)
    # Row groups of about 8,192 rows: bounded memory whatever the collection's size.
    assert pq.ParquetFile(out).metadata.num_row_groups in (2, 3)


def test_fields_filter_and_row_groups(coll, tmp_path):
    out = tmp_path / "some.parquet"
    rows = coll.to_parquet(
        str(out), fields=["_id", "n", "who.name"], filter={"kind": "b"}, row_group_rows=1000
    )
    want = pa.table(coll.to_arrow(fields=["_id", "n", "who.name"], filter={"kind": "b"}))
    assert rows == want.num_rows == sum(1 for d in DOCS.values() if d["kind"] == "b")
    back = pq.read_table(out)
    assert back.equals(want)
    assert back.column_names == ["_id", "n", "who.name"]
    # A group closes once its batches hold row_group_rows rows (a batch may end early, at
    # the end of a stretch of blocks read on one core).
    groups = pq.ParquetFile(out).metadata.num_row_groups
    assert rows // 2000 <= groups <= rows // 1000


def test_a_given_schema_is_written(coll, tmp_path):
    schema = pa.schema(
        [pa.field("_id", pa.string(), nullable=False), ("x", pa.float64()), ("n", pa.float64())]
    )
    out = tmp_path / "typed.parquet"
    coll.to_parquet(out, schema=schema)
    back = pq.read_table(out)
    assert back.schema.equals(schema)
    assert back.column("n").to_pylist()[:3] == [0.0, 1.0, 2.0]


def test_a_misfit_leaves_no_file_and_keeps_the_old_one(coll, tmp_path):
    out = tmp_path / "x.parquet"
    out.write_bytes(b"old")
    schema = pa.schema([("_id", pa.string()), ("kind", pa.int64())])
    with pytest.raises(stele.InvalidInput, match="kind"):
        coll.to_parquet(out, schema=schema)
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("x.")] == ["x.parquet"]


def test_an_unknown_field_path_is_an_error(coll, tmp_path):
    with pytest.raises(stele.InvalidInput):
        coll.to_parquet(tmp_path / "y.parquet", fields=["a..b"])
    assert not (tmp_path / "y.parquet").exists()


def test_an_empty_collection_writes_an_empty_file(tmp_path):
    with stele.open(tmp_path / "db") as db:
        out = tmp_path / "e.parquet"
        assert db["none"].to_parquet(out) == 0
        assert pq.read_table(out).num_rows == 0


def test_import_parquet_round_trips_to_parquet(coll, tmp_path):
    out = tmp_path / "all.parquet"
    coll.to_parquet(out)
    with stele.open(tmp_path / "back") as db:
        report = db["docs"].import_parquet(out)
        assert report["imported"] == len(DOCS)
        assert report["bytes_read"] == out.stat().st_size  # read whole
        back = db["docs"]
        assert len(back) == len(DOCS)
        for key in ("d00000", "d00007", "d12345", "d19999"):
            # A null cell is left out of its document (a missing field reads back null).
            want = {k: v for k, v in DOCS[key].items() if v is not None}
            assert back[key].to_python() == want, key
        # The same rows come out as they went in, types included; the column of nulls only
        # (`note`) is in no document now, so in no column.
        want = pa.table(coll.to_arrow()).drop_columns(["note"])
        assert pa.table(back.to_arrow()).equals(want)


def test_import_parquet_of_ids_out_of_order_and_numbered(tmp_path):
    ids = [f"k{i:04}" for i in range(3000)]
    ids[10], ids[2500] = ids[2500], ids[10]
    table = pa.table({"_id": ids, "n": list(range(3000))})
    out = tmp_path / "shuffled.parquet"
    pq.write_table(table, out)
    with stele.open(tmp_path / "db") as db:
        assert db["c"].import_parquet(out)["imported"] == 3000
        assert db["c"]["k2500"].to_python() == {"n": 10}
        assert db["c"]["k0010"].to_python() == {"n": 2500}
        # No id column: numbered from 1 (ten digits), in file order.
        pq.write_table(pa.table({"n": [5, 6, 7]}), tmp_path / "plain.parquet")
        assert db["plain"].import_parquet(tmp_path / "plain.parquet")["imported"] == 3
        assert db["plain"]["0000000001"].to_python() == {"n": 5}
        assert db["plain"]["0000000003"].to_python() == {"n": 7}


def test_import_parquet_errors_leave_nothing(tmp_path):
    bad = tmp_path / "not.parquet"
    bad.write_bytes(b"this is not parquet")
    with stele.open(tmp_path / "db") as db:
        with pytest.raises(stele.SteleError, match="not.parquet"):
            db["c"].import_parquet(bad)
        pq.write_table(pa.table({"_id": ["a", None, "c"], "n": [1, 2, 3]}), tmp_path / "n.parquet")
        with pytest.raises(stele.InvalidInput):
            db["c"].import_parquet(tmp_path / "n.parquet")
        assert len(db["c"]) == 0
        report = db["c"].import_parquet(tmp_path / "n.parquet", skip_bad=True)
        assert report["imported"] == 2
        assert sorted(k for k, _ in db["c"].items()) == ["a", "c"]
