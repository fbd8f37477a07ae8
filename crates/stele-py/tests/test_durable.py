"""Durable maps: build, open, roots, every read method, changes, saves, compaction, snapshots."""

from __future__ import annotations

import gc
import threading
from collections.abc import Mapping

import pytest

import stele

PAIRS = [(f"k{i:04}", f"v{i}") for i in range(2000)]


@pytest.fixture
def m(tmp_path) -> stele.DurableMap:
    return stele.DurableMap.build(reversed(PAIRS), tmp_path)


def keys(it):
    return [k for k, _ in it]


def test_build_and_read(m, tmp_path):
    assert isinstance(m, Mapping)
    assert len(m) == 2000 and m.dir == tmp_path
    assert m["k0042"] == b"v42" and m[b"k0042"] == b"v42"
    assert m.get("nope") is None and m.get("nope", b"d") == b"d"
    assert "k1999" in m and "k2000" not in m and 3 not in m
    with pytest.raises(KeyError):
        m["nope"]
    with pytest.raises(TypeError, match="bytes or str"):
        m[3]
    assert list(m)[:2] == [b"k0000", b"k0001"]
    assert list(m.keys()) == [k.encode() for k, _ in PAIRS]
    assert list(m.values())[-1] == b"v1999"
    assert list(m.items())[5] == (b"k0005", b"v5")
    assert len(m.layers) == 1 and m.id == m.layers[0] and m.unsaved_changes == 0
    assert repr(m).startswith("<stele.DurableMap ")


def test_range_prefix_positions(m):
    assert keys(m.range("k0010", "k0013")) == [b"k0010", b"k0011", b"k0012"]
    assert keys(m.range("k0010", "k0013", reverse=True)) == [b"k0012", b"k0011", b"k0010"]
    assert len(keys(m.range(end="k0100"))) == 100 and len(keys(m.range())) == 2000
    assert len(keys(m.prefix("k01"))) == 100
    assert keys(m.prefix("k199", reverse=True))[0] == b"k1999"
    assert m.nth(0) == (b"k0000", b"v0") and m.nth(-1) == (b"k1999", b"v1999")
    with pytest.raises(IndexError):
        m.nth(2000)
    with pytest.raises(IndexError):
        m.nth(-2001)
    assert m.rank("k0100") == 100 and m.rank("k0100x") == 101
    assert m.first() == (b"k0000", b"v0") and m.last() == (b"k1999", b"v1999")


def test_changes_save_reopen_compact(m, tmp_path):
    base = m.id
    m.put("k0001", "changed")
    m["new"] = b"value"
    m["doc"] = stele.Document.from_json('{"a": 1}')
    assert m.remove("k0002") is True and m.remove("k0002") is False
    del m["k0003"]
    with pytest.raises(KeyError):
        del m["k0003"]
    assert m.unsaved_changes == 5 and len(m) == 2000 + 2 - 2
    # reads see the unsaved changes merged, positions too
    assert m["k0001"] == b"changed" and "k0002" not in m
    assert stele.Document(m["doc"])["a"] == 1
    assert m.nth(0)[0] == b"doc" and m.nth(3) == (b"k0004", b"v4") and m.rank("k0004") == 3
    assert m.last() == (b"new", b"value")
    diff = m.save()
    assert m.id == diff and m.layers == [base, diff] and m.unsaved_changes == 0
    again = stele.DurableMap.open(tmp_path, diff)
    assert dict(again.items()) == dict(m.items())
    top = m.compact()
    assert m.layers == [top] and len(m) == 2000
    assert dict(stele.DurableMap.open(str(tmp_path), top).items()) == dict(m.items())


def test_new_map(tmp_path):
    m = stele.DurableMap.new(tmp_path)
    assert len(m) == 0 and m.id is None and m.first() is None and list(m) == []
    m["a"] = "1"
    assert m.save() == m.id and m["a"] == b"1"


def test_snapshot_and_iterators_keep_their_state(m):
    snap = m.snapshot()
    it = iter(m)
    next(it)
    m["k0000x"] = "inserted"
    del m["k1999"]
    m.compact()
    assert len(snap) == 2000 and "k1999" in snap and "k0000x" not in snap
    rest = list(it)
    assert b"k0000x" not in rest and rest[-1] == b"k1999"
    snap["only-in-snapshot"] = "x"
    assert "only-in-snapshot" not in m
    del snap
    gc.collect()


def test_roots_commit_and_gc(tmp_path):
    with pytest.raises(FileNotFoundError, match="no root"):
        stele.DurableMap.at_root(tmp_path, "fruit")
    m = stele.DurableMap.at_root(tmp_path, "fruit", create=True)
    m["apple"] = "1"
    first = m.commit()
    other = stele.DurableMap.at_root(tmp_path, "fruit")
    assert other.id == first and other["apple"] == b"1"
    m["pear"] = "2"
    m.commit()
    other["fig"] = "3"
    with pytest.raises(stele.SteleError):
        other.commit()  # the root moved since `other` was opened
    m.compact()
    top = m.commit()
    del other
    gc.collect()
    report = m.collect_garbage()
    assert set(report) == {"removed", "in_use", "partials_removed"}
    assert top not in report["removed"]
    assert stele.DurableMap.at_root(tmp_path, "fruit").id == top
    with pytest.raises(stele.InvalidInput):
        stele.DurableMap.new(tmp_path).commit()  # not bound to a root
    with pytest.raises(stele.InvalidInput):
        stele.DurableMap.at_root(tmp_path, "bad/name", create=True)


def test_errors(tmp_path):
    with pytest.raises(stele.InvalidInput, match="table id"):
        stele.DurableMap.open(tmp_path, "nothex")
    with pytest.raises(FileNotFoundError):
        stele.DurableMap.open(tmp_path, "0" * 32)
    with pytest.raises(TypeError, match="pairs"):
        stele.DurableMap.build([("a", "b", "c")], tmp_path)
    with pytest.raises(TypeError):
        stele.DurableMap.build([(1, "b")], tmp_path)

    def failing():
        yield ("a", "1")
        raise RuntimeError("from the generator")

    with pytest.raises(RuntimeError, match="from the generator"):
        stele.DurableMap.build(failing(), tmp_path)


def test_build_many_from_a_generator(tmp_path):
    n = 20_000  # several pulls of 4,096 pairs with the GIL taken back
    m = stele.DurableMap.build(((f"{i:06}", str(i)) for i in range(n)), tmp_path)
    assert len(m) == n and m.nth(12_345) == (b"012345", b"12345")


def test_threads(m):
    errors = []

    def writer(t):
        try:
            for i in range(200):
                m[f"t{t}-{i}"] = "x"
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(m) == 2000 + 800
