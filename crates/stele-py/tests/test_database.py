"""The document store: open/close, collections as mappings, batches, snapshots, imports,
indexes and queries, errors."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Mapping, MutableMapping
from decimal import Decimal

import pytest

import stele
from conftest import data_dir, first_lines

BOOKS = {
    "b1": {"title": "Dune", "year": 1965, "author": {"name": "Herbert"}, "tags": ["sf"]},
    "b2": {"title": "Emma", "year": 1815, "author": {"name": "Austen"}, "tags": ["novel"]},
    "b3": {"title": "Ubik", "year": 1969, "author": {"name": "Dick"}, "tags": ["sf", "novel"]},
}


@pytest.fixture
def db(tmp_path):
    with stele.open(tmp_path / "db") as db:
        yield db


@pytest.fixture
def books(db):
    coll = db["books"]
    assert coll.put_many(BOOKS.items()) == 3
    return coll


def test_open_close_context(tmp_path):
    path = tmp_path / "db"
    db = stele.Database(path)
    assert not db.closed and db.path == path
    assert repr(db).startswith("<stele.Database ")
    db["c"]["x"] = {"a": 1}
    db.close()
    assert db.closed and "closed" in repr(db)
    db.close()  # twice: nothing
    with pytest.raises(stele.SteleError, match="closed"):
        db["c"]["x"]
    with pytest.raises(stele.SteleError, match="closed"):
        db.collections()
    with stele.open(str(path)) as again:
        assert again["c"]["x"].to_python() == {"a": 1}
    assert again.closed


def test_close_leaves_tables_and_an_empty_log(tmp_path):
    path = tmp_path / "db"
    with stele.open(path) as db:
        db["c"].put_many((f"k{i:04}", {"n": i, "name": f"name {i}"}) for i in range(500))
        assert db.disk_usage()["log_bytes"] > 0
    logs = list((path / "wal").glob("*.log"))
    assert logs and all(p.stat().st_size == 0 for p in logs)
    db = stele.Database(path)
    usage = db.disk_usage()
    assert usage["log_bytes"] == 0, usage
    assert db["c"]["k0007"].to_python() == {"n": 7, "name": "name 7"}
    assert db.stats()["c"]["packed_blocks"] > 0
    assert usage["index_bytes"] == 0 and db.stats()["c"]["index_bytes"] == 0
    db["c"].create_index("by_name", ["name"])
    with_index = db.disk_usage()
    assert with_index["index_bytes"] > 0, with_index
    assert db.stats()["c"]["index_bytes"] == with_index["index_bytes"]
    db.close()
    assert all(p.stat().st_size == 0 for p in (path / "wal").glob("*.log"))


def test_second_open_is_in_use(tmp_path):
    with stele.open(tmp_path) as db:
        with pytest.raises(stele.InUseError, match="in use by pid") as info:
            stele.open(tmp_path)
        assert info.value.pid == os.getpid()
        assert str(info.value.path) == str(tmp_path)
        assert isinstance(info.value, stele.SteleError)
        db["c"]["a"] = "1"
    with stele.open(tmp_path) as db:  # closed: free again
        assert len(db["c"]) == 1


def test_in_use_by_another_process(tmp_path):
    code = (
        "import stele, sys, time\n"
        f"db = stele.open({str(tmp_path)!r})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        with pytest.raises(stele.InUseError) as info:
            stele.open(tmp_path)
        assert info.value.pid == proc.pid
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=30)


def test_collection_mapping(db, books):
    assert isinstance(books, Mapping)
    assert books.name == "books" and not books.read_only
    assert len(books) == 3
    assert list(books) == ["b1", "b2", "b3"]
    assert list(books.keys()) == ["b1", "b2", "b3"]
    assert "b1" in books and "nope" not in books and 5 not in books
    doc = books["b1"]
    assert isinstance(doc, stele.Document)
    assert doc["author"]["name"] == "Herbert"  # lazy view
    assert doc.to_python() == BOOKS["b1"]
    assert books.get("nope") is None and books.get("nope", 0) == 0
    assert books.get("b2")["year"] == 1815
    with pytest.raises(KeyError):
        books["nope"]
    with pytest.raises(TypeError, match='"books" holds text ids, not int'):
        books[5]
    assert [(k, v.to_python()) for k, v in books.items()] == list(BOOKS.items())
    assert [v.to_python() for v in books.values()] == list(BOOKS.values())
    assert dict(books.items())["b3"]["tags"][1] == "novel"
    assert db.collections() == ["books"] and "books" in db and "nope" not in db
    assert repr(books) == '<stele.Collection "books">'


def test_set_every_kind_of_value(db):
    c = db["things"]
    c["dict"] = {"a": [1, 2.5, None, True], "d": Decimal("10.50")}
    c["str"] = '{"json": "text", "n": 10.50}'
    c["bytes"] = b'{"json": "bytes"}'
    c["doc"] = stele.Document.from_json('{"from": "document"}')
    c["view"] = stele.Document.from_json('{"x": {"inner": 1}}')["x"]
    c["list"] = [1, 2, 3]
    assert c["dict"].to_python() == {"a": [1, 2.5, None, True], "d": 10.5}
    assert c["str"].json() == '{"json":"text","n":10.50}'
    assert c["bytes"]["json"] == "bytes"
    assert c["doc"]["from"] == "document"
    assert c["view"].to_python() == {"inner": 1}
    assert c["list"][2] == 3
    c["dict"] = {"replaced": True}
    assert c["dict"].to_python() == {"replaced": True} and len(c) == 6


def test_bad_values_and_ids(db):
    c = db["c"]
    with pytest.raises(stele.InvalidInput) as info:
        c["x"] = '{"broken": '
    assert info.value.line == 1
    with pytest.raises(TypeError):
        c["x"] = {"a": object()}
    with pytest.raises(stele.InvalidInput, match="invalid document id"):
        c[""] = {}
    with pytest.raises(stele.InvalidInput, match="invalid document id"):
        c["x" * 1025] = {}
    with pytest.raises(TypeError, match="str or int"):
        c[1.5] = {}
    with pytest.raises(stele.InvalidInput, match="invalid collection name"):
        db["_reserved"]
    with pytest.raises(stele.InvalidInput, match="invalid collection name"):
        db["a/b"]
    assert len(c) == 0


def test_delete(db, books):
    del books["b2"]
    assert "b2" not in books and len(books) == 2
    with pytest.raises(KeyError):
        del books["b2"]


def test_decimals_option(tmp_path):
    with stele.open(tmp_path, decimals="decimal") as db:
        db["c"]["x"] = '{"pay": 10.50}'
        assert db["c"]["x"]["pay"] == Decimal("10.50")
    with pytest.raises(stele.InvalidInput, match="decimals"):
        stele.open(tmp_path, decimals="nope")


def test_trusted_reads_the_same(tmp_path):
    with stele.open(tmp_path) as db:
        db["c"].put_many(BOOKS.items())
    with stele.open(tmp_path, trusted=True) as db:
        assert {k: v.to_python() for k, v in db["c"].items()} == BOOKS


def test_disk_usage_counts_the_log_until_a_checkpoint(tmp_path):
    with stele.open(tmp_path) as db:
        empty = db.disk_usage()
        for i in range(100):
            db["c"][f"k{i}"] = {"i": i, "pad": "x" * 50}
        written = db.disk_usage()
        assert written["log_bytes"] > empty["log_bytes"]
        assert written["total_bytes"] > written["log_bytes"]
        # The log writes into zeroes it keeps ahead of its records.
        assert 0 < written["log_zeroes_bytes"] < empty["log_zeroes_bytes"]
        db.checkpoint()
        assert db.disk_usage()["log_bytes"] < written["log_bytes"]


def test_reopen_keeps_data_and_checkpoint_compact(tmp_path):
    with stele.open(tmp_path, checkpoint_bytes=1 << 10, compact_layers=2, pack_level=12) as db:
        c = db["c"]
        for i in range(200):
            c[f"k{i:03}"] = {"i": i, "pad": "x" * 50}
        db.checkpoint()
        del c["k000"]
        db.compact()
        stats = db.stats()["c"]
        assert stats["documents"] == 199 and stats["layers"] == 1
        assert stats["table_bytes"] > 0 and stats["unsaved_changes"] == 0
        # Compaction packed the documents into blocks (compression is on by default); the
        # collection's own map is then empty, which takes no file.
        assert stats["packed_blocks"] > 0 and 0 < stats["pack_bytes"] == stats["table_bytes"]
        assert stats["dictionaries"] <= 1
        assert c.stats() == stats
        sizes = c.compression_stats()
        assert sizes["raw_bytes"] > sizes["stored_bytes"] > 0
        assert sizes["ratio"] == sizes["raw_bytes"] / sizes["stored_bytes"]
    with stele.open(tmp_path) as db:
        c = db["c"]
        assert len(c) == 199 and c["k199"]["i"] == 199 and "k000" not in c


def test_pack_streams_shrinks_nested_documents_and_reads_them_back(tmp_path):
    docs = {
        f"k{i:04}": {"name": f"item {i}", "tags": ["a", f"t{i % 9}"], "spec": {"w": i % 13, "ok": i % 2 == 0, "note": None}}
        for i in range(1500)
    }
    sizes = {}
    for streams in (True, False):
        with stele.open(tmp_path / str(streams), pack_streams=streams) as db:
            c = db["c"]
            with db.batch() as b:
                for k, v in docs.items():
                    b.put("c", k, v)
            db.compact()
            sizes[streams] = db.stats()["c"]["pack_bytes"]
            assert all(c[k] == v for k, v in list(docs.items())[::37])
            assert dict(c.items()) == docs
    assert sizes[True] < sizes[False]


def test_put_many_with_id_field(db):
    c = db["people"]
    people = [{"id": i, "name": f"p{i}"} for i in range(26)]
    assert c.put_many(iter(people), id_field="id", batch=10) == 26
    assert c[7]["name"] == "p7" and list(c)[:3] == [0, 1, 2]
    # A collection's ids are all ints or all strs.
    with pytest.raises(stele.InvalidInput, match='holds integer ids, and "s" is not one'):
        c.put_many([{"id": "s", "name": "str id"}], id_field="id")
    docs = [stele.Document.from_python({"key": "d1", "v": 1})]
    keyed = db["keyed"]
    assert keyed.put_many(docs, id_field="key") == 1 and keyed["d1"]["v"] == 1
    with pytest.raises(stele.InvalidInput, match="no field"):
        c.put_many([{"name": "no id"}], id_field="id")
    with pytest.raises(TypeError, match="str or an int"):
        c.put_many([{"id": 1.5}], id_field="id")
    with pytest.raises(TypeError, match="pairs"):
        c.put_many(["ab"])
    with pytest.raises(TypeError, match="pairs"):
        c.put_many([("a", {}, "extra")])


def test_put_many_of_one_batch_commits_it_and_of_more_lands_all_or_nothing(db):
    c = db["c"]
    # One batch: one commit (a bad document fails it).
    with pytest.raises(stele.InvalidInput):
        c.put_many([("k0", {"i": 0}), ("bad", '{"x":')], batch=2)
    assert len(c) == 0
    # More than one batch: written in bulk, all or nothing.
    items = [(f"k{i}", {"i": i}) for i in range(5)] + [("bad", '{"x":')]
    with pytest.raises(stele.InvalidInput):
        c.put_many(items, batch=2)
    assert len(c) == 0


def test_put_many_of_many_documents_lands_packed_with_indexes_right(db):
    c = db["c"]
    c.create_index("by_city", "city")
    cities = ["Lima", "Oslo", "Pune"]
    first = [(f"k{i:05}", {"i": i, "city": cities[i % 3]}) for i in range(3000)]
    assert c.put_many(first, batch=500) == 3000
    stats = db.stats()["c"]
    assert stats["documents"] == 3000 and stats["packed_blocks"] > 0, stats
    # Into the non-empty collection: JSON text and dicts, a replaced id, the last of two wins.
    c["extra"] = {"i": -1, "city": "Oslo"}
    del c["k00001"]
    second = [(f"k{i:05}", json.dumps({"i": -i, "city": "Kyiv"})) for i in range(2500, 4000)]
    second += [("k00002", {"i": 2, "city": "Bonn"}), ("k00002", {"i": 22, "city": "Bonn"})]
    assert c.put_many(second, batch=400) == len(second)
    want = {k: v for k, v in first}
    want.pop("k00001")
    want["extra"] = {"i": -1, "city": "Oslo"}
    want.update({k: json.loads(v) if isinstance(v, str) else v for k, v in second})
    assert len(c) == len(want)
    assert {k: d.to_python() for k, d in c.items()} == want
    for city in [*cities, "Kyiv", "Bonn"]:
        got = c.query(eq={"city": city})
        assert got.index == "by_city"
        assert sorted(got.ids()) == sorted(k for k, v in want.items() if v["city"] == city)


def test_batch_commits_on_exit(db, books):
    with db.batch() as b:
        b.put("books", "b4", {"title": "Kindred"})
        b.put("authors", "a1", '{"name": "Butler"}')
        b.delete("books", "b1")
        b.delete("books", "missing")  # nothing happens
        assert len(b) == 4
        assert "b4" not in books  # not yet
    assert "b4" in books and "b1" not in books and db["authors"]["a1"]["name"] == "Butler"
    with pytest.raises(stele.SteleError, match="already committed"):
        b.put("books", "b5", {})


def test_batch_rolled_back_on_exception(db, books):
    with pytest.raises(RuntimeError, match="boom"):
        with db.batch() as b:
            b.put("books", "b4", {"title": "Kindred"})
            b.delete("books", "b1")
            raise RuntimeError("boom")
    assert "b4" not in books and "b1" in books and len(books) == 3


def test_batch_explicit_commit_discard_and_errors(db, books):
    b = db.batch()
    b.put("books", "b9", {"x": 1})
    b.commit()
    assert "b9" in books
    with pytest.raises(stele.SteleError, match="already committed"):
        b.commit()
    b = db.batch()
    b.put("books", "b10", {"x": 1})
    b.discard()
    assert "b10" not in books
    with pytest.raises(stele.SteleError):
        len(b)
    b = db.batch()
    with pytest.raises(stele.InvalidInput):
        b.put("books", "x", "not json")
    with pytest.raises(stele.InvalidInput, match="collection name"):
        b.put("bad name", "x", {})
    with pytest.raises(stele.InvalidInput, match="collection name"):
        b.delete(".x", "x")
    with b:
        b.put("books", "ok", {})
    assert "ok" in books
    with db.batch() as b:
        b.put("books", "early", {})
        b.commit()  # committing inside the block is fine; exit then does nothing
    assert "early" in books


def test_snapshot_unaffected_by_later_writes(db, books):
    snap = db.snapshot()
    seq = snap.seq
    books["b4"] = {"title": "new"}
    del books["b1"]
    books["b2"] = {"title": "changed"}
    old = snap["books"]
    assert old.read_only and "(snapshot)" in repr(old)
    assert len(old) == 3 and "b1" in old and "b4" not in old
    assert old["b2"]["title"] == "Emma"
    assert list(old) == ["b1", "b2", "b3"]
    assert old.get("b4") is None
    assert old.query(eq={"title": "Emma"}).ids() == ["b2"]  # queries read the snapshot too
    assert books.query(eq={"title": "Emma"}).ids() == []
    assert [v["title"] for v in old.values()] == ["Dune", "Emma", "Ubik"]
    assert old.stats()["documents"] == 3 and old.indexes() == {}
    assert snap.collections() == ["books"] and "books" in snap
    assert snap.stats()["books"]["documents"] == 3
    assert db.snapshot().seq > seq
    assert repr(snap).startswith("<stele.Snapshot seq=")
    with pytest.raises(TypeError, match="read-only"):
        old["x"] = {}
    with pytest.raises(TypeError, match="read-only"):
        del old["b1"]
    with pytest.raises(TypeError, match="read-only"):
        old.put_many([])
    with pytest.raises(TypeError, match="read-only"):
        old.create_index("i", "year")
    # iteration over a live collection is a snapshot too
    it = iter(books)
    books["zzz"] = {}
    assert "zzz" not in list(it)


def test_snapshot_outlives_close(tmp_path):
    db = stele.open(tmp_path)
    db["c"]["a"] = {"v": 1}
    snap = db.snapshot()
    db.close()
    assert snap["c"]["a"]["v"] == 1


def test_indexes_and_queries_agree(db):
    c = db["cities"]
    rows = [
        {"name": f"city{i:03}", "country": ["FR", "DE", "US"][i % 3], "pop": i * 1000, "tags": [f"t{i % 4}"]}
        for i in range(90)
    ]
    c.put_many(((f"c{i:03}", r) for i, r in enumerate(rows)))
    queries = [
        dict(eq={"country": "DE"}),
        dict(eq=("country", "US"), limit=5),
        dict(range={"pop": (10_000, 20_000)}),
        dict(range={"pop": (None, 3000)}),
        dict(range={"pop": (85_000, None)}, order_by="pop", desc=True),
        dict(prefix={"name": "city01"}),
        dict(eq={"tags[]": "t2"}, select=["name", "pop"]),
        dict(eq={"country": "FR"}, order_by="pop", desc=True, limit=3),
    ]
    before = [c.query(**q) for q in queries]
    assert all(r.index is None and r.plan.startswith("full scan") for r in before)
    c.create_index("by_country", ["country"])
    c.create_index("by_pop", "pop")
    c.create_index("by_name", ["name"])
    c.create_index("by_tag", ["tags[]"])
    assert c.indexes() == {
        "by_country": ["country"],
        "by_name": ["name"],
        "by_pop": ["pop"],
        "by_tag": ["tags[]"],
    }
    after = [c.query(**q) for q in queries]
    assert all(r.index is not None and r.plan.startswith("index scan") for r in after)
    for q, a, b in zip(queries, before, after):
        if "order_by" in q or "limit" not in q:
            key = (lambda r: r) if "order_by" in q else sorted
            assert key([(i, d.to_python()) for i, d in a]) == key(
                [(i, d.to_python()) for i, d in b]
            ), q
    de = after[0]
    assert len(de) == 30 and all(d["country"] == "DE" for _, d in de)
    assert set(de.ids()) == {f"c{i:03}" for i in range(1, 90, 3)}
    assert de[0] == de.rows[0] and isinstance(de.rows, list)
    assert len(after[1]) == 5
    assert [d["pop"] for _, d in after[2]] == list(range(10_000, 20_000, 1000))
    assert [d["pop"] for _, d in after[4]] == list(range(89_000, 84_000, -1000))
    assert sorted(after[6].ids()) == sorted(before[6].ids())
    assert after[6][0][1].to_python() == {"name": "city002", "pop": 2000}
    assert [d["pop"] for _, d in after[7]] == [87_000, 84_000, 81_000]
    assert "rows=30" in repr(de)
    c["new"] = {"name": "new", "country": "DE", "pop": 1}
    assert len(c.query(eq={"country": "DE"})) == 31  # indexes kept current
    c.drop_index("by_country")
    assert "by_country" not in c.indexes()
    assert c.query(eq={"country": "DE"}).index is None


def test_query_errors(db, books):
    with pytest.raises(stele.InvalidInput, match="one condition"):
        books.query(eq={"a": 1}, prefix={"b": "x"})
    with pytest.raises(stele.InvalidInput, match="one field"):
        books.query(eq={"a": 1, "b": 2})
    with pytest.raises(stele.InvalidInput):
        books.query(range={"year": 5})
    with pytest.raises(TypeError, match="str"):
        books.query(prefix={"title": 5})
    with pytest.raises(stele.InvalidInput, match="field path"):
        books.query(eq={"": 1})
    with pytest.raises(stele.InvalidInput, match="index"):
        books.drop_index("nope")
    books.create_index("i", "year")
    with pytest.raises(stele.InvalidInput, match="already exists"):
        books.create_index("i", "title")
    assert [i for i, _ in books.query()] == ["b1", "b2", "b3"]
    assert [i for i, _ in books.query(order_by="year")] == ["b2", "b1", "b3"]
    assert books.query(select=["title"])[0][1].to_python() == {"title": "Dune"}


def test_arguments_that_cannot_mean_anything_are_errors(db, books):
    # A misspelt collection is not an empty result.
    with pytest.raises(stele.InvalidInput, match='no collection "bookz".*books'):
        db["bookz"].query(eq={"year": 1965})
    # An index made before the first document is a collection that exists.
    db["later"].create_index("by_year", "year")
    assert len(db["later"].query(eq={"year": 1})) == 0
    with pytest.raises(stele.InvalidInput, match="limit of 0"):
        books.query(limit=0)
    with pytest.raises(stele.InvalidInput, match="swap the bounds"):
        books.query(range={"year": (2000, 1900)})
    assert len(books.query(range={"year": (1965, 1965)})) == 0  # empty, not a mistake
    with pytest.raises(stele.InvalidInput, match="field path"):
        books.query(order_by="")
    with pytest.raises(stele.InvalidInput, match="batch"):
        books.put_many([("x", {})], batch=0)
    assert "x" not in books


def test_errors_speak_in_keyword_arguments(tmp_path):
    with pytest.raises(stele.InvalidInput) as e:
        stele.Document.from_json('{"a":1,"a":2}', duplicates="reject")
    assert 'duplicates="last_wins"' in str(e.value) and "::" not in str(e.value)
    with pytest.raises(stele.InvalidInput) as e:
        stele.Table.build([("k", "1"), ("k", "2")], tmp_path)
    assert 'duplicates="keep_last"' in str(e.value) and "::" not in str(e.value)
    with pytest.raises(stele.InvalidInput) as e:
        stele.Document.from_json("[" * 2000 + "]" * 2000)
    assert "::" not in str(e.value), str(e.value)


def test_collection_is_a_mutable_mapping(db, books):
    assert isinstance(books, MutableMapping)
    # update: a mapping, pairs and keywords, in one commit.
    books.update({"b4": {"title": "Kim"}}, b5='{"title": "Nana"}')
    books.update([("b6", {"title": "Odd"})])
    assert books["b4"]["title"] == "Kim" and books["b5"]["title"] == "Nana"
    assert books["b6"].to_python() == {"title": "Odd"}
    with pytest.raises(TypeError, match="pairs"):
        books.update(["b7"])
    assert "b7" not in books
    # pop, with and without a default.
    assert books.pop("b6").to_python() == {"title": "Odd"}
    assert "b6" not in books
    assert books.pop("b6", 42) == 42 and books.pop("b6", None) is None
    with pytest.raises(KeyError):
        books.pop("b6")
    # setdefault keeps what is there and stores what is not.
    assert books.setdefault("b1", {"title": "other"})["title"] == "Dune"
    assert books.setdefault("b8", {"title": "Zed"})["title"] == "Zed"
    assert books.setdefault("b9").to_python() is None
    # popitem takes the smallest id; clear empties (indexes stay).
    books.create_index("by_title", "title")
    first_id, first = books.popitem()
    assert first_id == "b1" and first["title"] == "Dune" and "b1" not in books
    books.clear()
    assert len(books) == 0 and list(books) == []
    assert books.indexes() == {"by_title": ["title"]}
    with pytest.raises(KeyError):
        books.popitem()
    # Writes through a snapshot's collection are refused.
    books["a"] = {}
    frozen = db.snapshot()["books"]
    for write in (lambda: frozen.update(a={}), lambda: frozen.pop("a"), frozen.clear):
        with pytest.raises(TypeError, match="read-only"):
            write()


def test_package_namespace_is_only_the_api():
    import types

    # Submodules (stele.dask, stele.spark) appear once imported; they are API too.
    public = {
        name
        for name in dir(stele)
        if not name.startswith("_") and not isinstance(getattr(stele, name), types.ModuleType)
    }
    assert public == set(stele.__all__), public ^ set(stele.__all__)


def test_import_jsonl_of_real_data(db, tmp_path):
    lines = first_lines("collections/geonames-cities.jsonl.zst", 400)
    path = tmp_path / "cities.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n\n")
    c = db["cities"]
    report = c.import_jsonl(path, batch=64)
    assert report["imported"] == 400 and report["skipped"] == 0 and report["bad"] == []
    # Written in bulk: one switch whatever the batch size.
    assert report["batches"] == 1 and report["bytes_read"] == path.stat().st_size
    assert len(c) == 400
    assert c["0000000001"].to_python() == json.loads(lines[0])
    assert c["0000000400"].to_python() == json.loads(lines[399])
    assert list(c)[:2] == ["0000000001", "0000000002"]
    # the same by an id field, and queries over the real data
    keyed = tmp_path / "keyed.jsonl"
    keyed.write_text(
        "".join(
            json.dumps({"key": {"n": i}, **json.loads(line)}) + "\n" for i, line in enumerate(lines)
        )
    )
    k = db["keyed"]
    assert k.import_jsonl(str(keyed), id_field="key.n")["imported"] == 400
    assert k["399"]["name"] == json.loads(lines[399])["name"]
    country = json.loads(lines[0])["country"]
    expected = sorted(i for i, line in enumerate(lines) if json.loads(line)["country"] == country)
    scan = k.query(eq={"country": country})
    k.create_index("by_country", "country")
    indexed = k.query(eq={"country": country})
    assert scan.index is None and indexed.index == "by_country"
    assert sorted(int(i) for i in scan.ids()) == expected
    assert sorted(int(i) for i in indexed.ids()) == expected


def test_import_jsonl_reads_zstd_and_refuses_gzip(db, tmp_path):
    packed = data_dir() / "collections/mongodb-samples/grades.jsonl.zst"
    lines = first_lines("collections/mongodb-samples/grades.jsonl.zst", 10**6)
    plain = tmp_path / "grades.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    report = db["zst"].import_jsonl(packed)
    assert report["imported"] == len(lines) == db["plain"].import_jsonl(plain)["imported"]
    # The text's bytes, not the compressed file's.
    assert report["bytes_read"] == plain.stat().st_size
    assert {k: v.to_python() for k, v in db["zst"].items()} == {
        k: v.to_python() for k, v in db["plain"].items()
    }
    gz = tmp_path / "grades.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(stele.InvalidInput, match="gzip-compressed.*gunzip -c"):
        db["gz"].import_jsonl(gz)
    assert "gz" not in db.collections()


def test_import_jsonl_bad_lines(db, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a"}\n{"id": \n{"no": "id"}\n{"id": [1]}\n{"id": 7}\n')
    c = db["c"]
    with pytest.raises(stele.InvalidInput, match="skip_bad=True") as info:
        c.import_jsonl(path, id_field="id", batch=1)
    assert info.value.line == 2 and info.value.record == 2
    assert len(c) == 0, "all or nothing"
    report = c.import_jsonl(path, id_field="id", skip_bad=True)
    # Line 5's id is an int where line 1's was a str: a bad record too.
    assert report["imported"] == 1 and report["skipped"] == 4
    assert [b["line"] for b in report["bad"]] == [2, 3, 4, 5]
    assert "all integers or all strings" in report["bad"][3]["reason"]
    assert sorted(c) == ["a"]
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        c.import_jsonl(tmp_path / "missing.jsonl")
    with pytest.raises(stele.InvalidInput):
        c.import_jsonl(path, id_field="a[")
    with pytest.raises(stele.InvalidInput, match="no id field"):
        c.import_jsonl(path, id_field="nope")
    with pytest.raises(stele.InvalidInput, match="format"):
        c.import_file(path, format="csv")
    with pytest.raises(stele.InvalidInput, match="batch"):
        c.import_file(path, batch=0)


def stele_cli():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    exe = os.path.join(target, "release", "stele")
    if not os.path.exists(exe):
        pytest.skip(f"{exe} is not built (cargo build --release -p stele-cli; scripts/check.sh does)")
    return exe


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.mark.parametrize("layout", ["jsonl", "json", "dir"])
def test_python_and_cli_imports_give_the_same_database(tmp_path, layout):
    """The same file through `stele import` and `Collection.import_file`: same ids, same
    documents, same report."""
    lines = first_lines("collections/geonames-cities.jsonl.zst", 300)
    docs = [json.loads(x) for x in lines]
    if layout == "jsonl":
        src = tmp_path / "in.jsonl"
        src.write_bytes(b"\n".join(lines) + b"\n")
    elif layout == "json":
        src = tmp_path / "in.json"
        src.write_text("[\n" + ",\n".join(x.decode() for x in lines) + "\n]")
    else:
        src = tmp_path / "in"
        src.mkdir()
        for i, x in enumerate(lines):
            (src / f"doc{i:04}.json").write_bytes(x)
    cli_db, py_db = tmp_path / "cli.db", tmp_path / "py.db"
    out = subprocess.run(
        [stele_cli(), "import", str(cli_db), "c", str(src), "--json"], capture_output=True, check=True
    )
    cli_report = json.loads(out.stdout)
    with stele.open(py_db) as db:
        report = db["c"].import_file(src)
    assert report["imported"] == cli_report["documents"] == 300
    with stele.open(cli_db) as a, stele.open(py_db) as b:
        got_a = [(k, v.to_python()) for k, v in a["c"].items()]
        got_b = [(k, v.to_python()) for k, v in b["c"].items()]
    assert got_a == got_b
    canon = sorted(json.dumps(d, sort_keys=True) for d in docs)
    assert sorted(json.dumps(v, sort_keys=True) for _, v in got_a) == canon


def test_gil_released_while_importing(db, tmp_path):
    """The import reads a FIFO that this thread fills: it can finish only if the import
    releases the GIL while it opens and reads the file (and between its batches)."""
    import faulthandler
    import threading

    lines = first_lines("collections/geonames-cities.jsonl.zst", 5_000)
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    c = db["cities"]
    results = []
    worker = threading.Thread(target=lambda: results.append(c.import_jsonl(fifo, batch=700)))
    faulthandler.dump_traceback_later(120, exit=True)  # a GIL held by mistake would hang here
    try:
        worker.start()
        with open(fifo, "wb") as f:
            for i in range(0, len(lines), 500):
                f.write(b"\n".join(lines[i : i + 500]) + b"\n")
                f.flush()
        worker.join()
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert [r["imported"] for r in results] == [5_000]
    assert len(c) == 5_000


def test_writers_in_threads(db):
    import threading

    c = db["c"]

    def writer(t):
        for i in range(50):
            c[f"t{t}-{i:02}"] = {"t": t, "i": i}

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 200 and c["t3-49"]["i"] == 49


def test_a_numbered_record_asked_for_by_an_int_names_its_id(db, tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(1, 51)))
    c = db["c"]
    assert c.import_jsonl(path)["imported"] == 50
    with pytest.raises(TypeError, match=r'not int; .* use "0000000042"'):
        c[42]
    assert c["0000000042"]["n"] == 42
    with pytest.raises(TypeError, match="document ids are str or int, not float"):
        c[4.2]
